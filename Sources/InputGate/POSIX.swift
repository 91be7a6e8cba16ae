import Glibc

/// Small functions over what the POSIX calls of `FileSystem` return.
package enum POSIX {
    /// The system's text for `code`, such as "No space left on device".
    package static func message(_ code: Int32) -> String {
        // glibc's strerror returns static text for every known code, so this is thread-safe.
        String(cString: strerror(code))
    }

    /// What stands at a path, as `stat(2)` tells it: the one place a mode is classified.
    package enum FileKind: Sendable, Equatable, CustomStringConvertible {
        case regular, directory, symbolicLink, fifo, socket, characterDevice, blockDevice, other

        /// The kind `info` describes.
        package init(_ info: stat) {
            self =
                switch info.st_mode & S_IFMT {
                case S_IFREG: .regular
                case S_IFDIR: .directory
                case S_IFLNK: .symbolicLink
                case S_IFIFO: .fifo
                case S_IFSOCK: .socket
                case S_IFCHR: .characterDevice
                case S_IFBLK: .blockDevice
                default: .other
                }
        }

        /// The kind for a person: "a FIFO", "a directory".
        package var description: String {
            switch self {
            case .regular: "a regular file"
            case .directory: "a directory"
            case .symbolicLink: "a symbolic link"
            case .fifo: "a FIFO"
            case .socket: "a socket"
            case .characterDevice: "a character device"
            case .blockDevice: "a block device"
            case .other: "something else"
            }
        }
    }

    /// The name of a directory entry.
    package static func name(of entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafePointer(to: entry.pointee.d_name) { pointer in
            pointer.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                String(cString: $0)
            }
        }
    }

    /// `name` in `directory`, with one slash between them whatever `directory` is ("/" too).
    package static func joined(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// An `errno` value as an error, so it can travel in a `Result`.
    package struct Errno: Error {
        package let code: Int32
        package init(_ code: Int32) { self.code = code }
    }
}
