import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

func unsavedReport(_ session: TestSession, _ app: String, _ extra: [String]) throws -> [String: Any] {
    let result = try session.run(["get", "--app", app, "--json"] + extra)
    #expect(result.status == 3, "\(result.standardError)")
    #expect(result.standardError.contains("could not be saved anywhere"))
    return try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
}

/// The occupied selection slots of a session, as `openudid slots --json` lists them.
func occupiedSelectionSlots(_ session: TestSession, _ extra: [String]) -> [(slot: Int, app: String, id: String)] {
    guard let result = try? session.run(["slots", "--json"] + extra),
        let object = try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any],
        let slots = object["slots"] as? [[String: Any]]
    else { return [] }
    return slots.filter { $0["kind"] as? String == "selection" }.map {
        (($0["slot"] as? Int) ?? -1, $0["app"] as? String ?? "", $0["id"] as? String ?? "")
    }
}

/// Every regular file under `root`, as absolute paths.
func allFiles(under root: String) throws -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
    var files: [String] = []
    for case let relative as String in enumerator {
        var info = stat()
        if lstat(root + "/" + relative, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { files.append(root + "/" + relative) }
    }
    return files.sorted()
}

/// The names and contents of every file under `root`, to compare before and after.
func snapshot(_ root: String, excluding: String? = nil) throws -> [String: Data] {
    var contents: [String: Data] = [:]
    for path in try allFiles(under: root) where path != excluding {
        contents[path] = try Data(contentsOf: URL(fileURLWithPath: path))
    }
    return contents
}

/// Writes to `path` until the file system is full.
func fillDisk(_ path: String) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard descriptor >= 0 else { throw HarnessError("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    let block = [UInt8](repeating: 0x2E, count: 512)
    while true {
        let written = block.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            guard errno == ENOSPC else { throw HarnessError("filling \(path): \(String(cString: strerror(errno)))") }
            return
        }
    }
}

/// A tmpfs mounted over a directory for one test, to make a small or read-only file system.
final class TmpfsMount: Sendable {
    let path: String

    /// Whether this process may mount file systems (root with CAP_SYS_ADMIN, not in a locked-down container).
    static let isPermitted: Bool = {
        guard geteuid() == 0 else { return false }
        let directory = probeDirectory()
        defer { rmdir(directory) }
        guard let probe = try? TmpfsMount(at: directory, size: "4k") else { return false }
        probe.unmount()
        return true
    }()

    private static func probeDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.path + "/openudid-mount-probe-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    init(at path: String, size: String) throws {
        self.path = path
        let result = try runCommand(
            try Tools.find("mount"), ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", path],
            environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"])
        guard result.status == 0 else { throw HarnessError("mount tmpfs on \(path): \(result.standardError)") }
    }

    func remountReadOnly() throws {
        let result = try runCommand(
            try Tools.find("mount"), ["-o", "remount,ro", path], environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"])
        guard result.status == 0 else { throw HarnessError("remount \(path) read-only: \(result.standardError)") }
    }

    func unmount() {
        _ = try? runCommand(try Tools.find("umount"), [path], environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"])
    }
}
