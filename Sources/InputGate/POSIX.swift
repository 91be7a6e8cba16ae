import Glibc

/// Small functions over what the POSIX calls of `FileSystem` return.
package enum POSIX {
    /// The system's text for `code`, such as "No space left on device".
    package static func message(_ code: Int32) -> String {
        // glibc's strerror returns static text for every known code, so this is thread-safe.
        String(cString: strerror(code))
    }

    /// Whether `info` describes a regular file.
    package static func isRegularFile(_ info: stat) -> Bool { info.st_mode & S_IFMT == S_IFREG }

    /// Whether `info` describes a directory.
    package static func isDirectory(_ info: stat) -> Bool { info.st_mode & S_IFMT == S_IFDIR }

    /// Whether `info` describes a symbolic link.
    package static func isSymbolicLink(_ info: stat) -> Bool { info.st_mode & S_IFMT == S_IFLNK }

    /// The name of a directory entry.
    package static func name(of entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafePointer(to: entry.pointee.d_name) { pointer in
            pointer.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                String(cString: $0)
            }
        }
    }

    /// An `errno` value as an error, so it can travel in a `Result`.
    package struct Errno: Error {
        package let code: Int32
        package init(_ code: Int32) { self.code = code }
    }
}
