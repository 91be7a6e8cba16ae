import Glibc

/// The one door through which a file the library did not write under its own
/// lock enters the process: the Xauthority file, the reset marker and key, file
/// slots, local caches, file mirrors (docs/SECURITY.md, "Where input enters").
///
/// Any process of the user can put anything at those paths, so the gate trusts
/// nothing about what stands there. It opens with `O_NONBLOCK` and `O_NOCTTY`,
/// so a FIFO, a terminal or a device never makes it wait; it takes a regular
/// file only, checked on the open descriptor (`fstat`), so nothing can be
/// swapped in between; it refuses a symbolic link at the file itself unless
/// the caller says the file's owner legitimately uses one (Xauthority); it
/// reads at most `limit` bytes and notices a file that grew past the cap while
/// it read; and it does not start after the caller's deadline. What it refuses
/// comes back as a `Refusal` that names the file and the reason, and nothing
/// was read from it.
package enum FileGate {
    /// Whether a symbolic link standing at the file itself is followed.
    package enum Links: Sendable {
        /// The file must be the file: a link there is refused (the library's own files).
        case refused
        /// A link is followed to a regular file (a file its owner may link, such as Xauthority).
        case followed
    }

    /// Why the gate refused a file. Nothing was read from it.
    package struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was wrong.
        package enum Reason: Sendable, Equatable {
            /// A symbolic link stands where links are refused.
            case link
            /// Something other than a regular file stands there: a FIFO, a socket, a device, a directory.
            case notRegular(POSIX.FileKind)
            /// The file is larger than the cap.
            case tooLarge(size: Int, limit: Int)
            /// A component of the path is not a directory.
            case notDirectory
            /// The caller's deadline had passed.
            case pastDeadline
            /// A system call failed with this `errno`.
            case system(Int32)
        }

        /// The file, as the caller named it.
        package let path: String
        /// What was wrong.
        package let reason: Reason

        /// The file and the reason, in one clause: "/home/u/.Xauthority is a FIFO, not a regular file".
        package var description: String {
            switch reason {
            case .link: "\(path) is a symbolic link"
            case .notRegular(let kind): "\(path) is not a regular file (\(kind) stands there)"
            case .tooLarge(let size, let limit): "\(path) is \(size) bytes, over the \(limit)-byte cap"
            case .notDirectory: "cannot read \(path): a component of the path is not a directory"
            case .pastDeadline: "\(path) was not read: the deadline had passed"
            case .system(let code): "cannot read \(path): \(POSIX.message(code))"
            }
        }
    }

    /// Reads a whole small file through the gate.
    ///
    /// - Parameters:
    ///   - path: The file; relative to `directory` when one is given.
    ///   - directory: An open directory that `path` is relative to, or `AT_FDCWD`.
    ///   - name: What to call the file in a refusal; `path` by default.
    ///   - limit: The largest size accepted, in bytes.
    ///   - links: Whether a symbolic link at the file itself is followed.
    ///   - deadline: The caller's deadline; nothing is opened after it.
    ///   - fs: The file-system funnel the calls go through.
    /// - Returns: The bytes, nil when nothing stands at the path, or why the file was refused.
    package static func read(
        _ path: String, in directory: Int32 = AT_FDCWD, name: String? = nil, limit: Int, links: Links = .refused,
        deadline: ContinuousClock.Instant? = nil, fileSystem fs: FileSystem = .system
    ) -> Result<[UInt8]?, Refusal> {
        let refuse = { (reason: Refusal.Reason) in Result<[UInt8]?, Refusal>.failure(Refusal(path: name ?? path, reason: reason)) }
        if let deadline, ContinuousClock.now >= deadline { return refuse(.pastDeadline) }
        let noFollow = links == .refused ? O_NOFOLLOW : 0
        let descriptor = fs.openat(directory, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | noFollow)
        guard descriptor >= 0 else {
            switch errno {
            case ENOENT: return .success(nil)
            case ELOOP where links == .refused: return refuse(.link)
            case ENOTDIR: return refuse(.notDirectory)
            case let code: return refuse(.system(code))
            }
        }
        defer { fs.close(descriptor) }
        var info = stat()
        guard fs.fstat(descriptor, &info) == 0 else { return refuse(.system(errno)) }
        guard POSIX.FileKind(info) == .regular else { return refuse(.notRegular(POSIX.FileKind(info))) }
        guard info.st_size <= limit else { return refuse(.tooLarge(size: Int(info.st_size), limit: limit)) }
        // One byte more than the cap, to notice a file that grew after fstat.
        // Read straight into the result's storage: no buffer of the cap's size
        // to clear and copy out of, a hundred times per resolution.
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: limit + 1) { buffer, initialized in
            var filled = 0
            while filled < buffer.count {
                let wanted = buffer.count - filled
                let count = fs.read(descriptor, buffer.baseAddress.map { UnsafeMutableRawPointer($0 + filled) }, wanted)
                if count < 0 {
                    failure = errno
                    break
                }
                filled += count
                // A regular file gives less than asked only at its end: no second
                // read to hear the same (a read per file slot, a hundred per resolution).
                if count < wanted { break }
            }
            initialized = filled
        }
        if failure != 0 { return refuse(.system(failure)) }
        guard bytes.count <= limit else { return refuse(.tooLarge(size: bytes.count, limit: limit)) }
        return .success(bytes)
    }
}
