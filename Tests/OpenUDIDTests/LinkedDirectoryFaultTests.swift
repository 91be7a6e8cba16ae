import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

@Suite struct LinkedDirectoryFaultTests {
    @Test(arguments: ["app directory", "vendors"])
    func aLinkedDirectoryIsNeverWrittenThroughAndTheIdentifierIsKept(linked: String) throws {
        let session = try TestSession(display: nil)
        let file = ["--mirror", "file"]
        let shared = try session.get("com.acme.notes", file)
        let paths = try StoragePaths(environment: session.environment, namespace: session.namespace)
        let directory =
            linked == "vendors"
            ? paths.vendorsDirectory : AtomicFile.split(paths.localCacheFile(for: try AppIdentity("com.acme.photos"))).directory
        let elsewhere = session.home.root.appendingPathComponent("elsewhere").path
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        if FileManager.default.fileExists(atPath: directory) { try FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: AtomicFile.split(directory).directory, withIntermediateDirectories: true)
        #expect(symlink(elsewhere, directory) == 0)

        let result = try session.run(["get", "--app", "com.acme.photos", "--json"] + file)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(report["id"] as? String == shared)
        #expect(try allFiles(under: elsewhere).isEmpty, "a write went through the link")
        let place = linked == "vendors" ? "mirror" : "local cache"
        #expect(report.repair(place)?.outcome == "skipped", "\(String(describing: report.repair(place)))")
        let complaints =
            report.rejections.map(\.reason) + ((report["sources"] as? [[String: Any]]) ?? []).compactMap { $0["detail"] as? String }
        #expect(complaints.contains { $0.contains(directory + " is a symbolic link") }, "\(complaints)")
    }

    @Test func getWarnsAndExitsWithThreeWhenNothingCouldBeSaved() throws {
        let session = try TestSession(display: nil)
        let data = session.home.dataHome.path
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        // Files standing where the directories go: nothing can be written, whoever runs the tool.
        try plant("not a directory", at: data + "/openudid")
        try plant("not a directory", at: data + "/com.acme.notes")
        let result = try session.run(["get", "--app", "com.acme.notes", "--mirror", "none"])
        #expect(result.status == 3, "\(result.standardError)")
        #expect(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines).count == 40)
        #expect(result.standardError.hasPrefix("openudid: the identifier could not be saved anywhere ("), "\(result.standardError)")

        // With one place that holds it, all is well.
        try FileManager.default.removeItem(atPath: data + "/com.acme.notes")
        #expect(try session.run(["get", "--app", "com.acme.notes", "--mirror", "none"]).status == 0)
    }
}
