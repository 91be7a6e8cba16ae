// A client app with types of its own named like the library's. It imports
// OpenUDIDKit without @testable, so only the public API is in reach, and it
// names the library's types through the module.
import Foundation
import OpenUDIDKit
import Testing

/// The client's own identifier type.
struct Identifier: Hashable {
    var shared: OpenUDIDKit.Identifier
    var appScoped: UUID
}

/// The client's own report type.
struct Report {
    var lines: [String]

    init(_ report: OpenUDIDKit.Report) {
        lines =
            ["id \(report.identifier.hex)", "origin \(report.origin.rawValue)"]
            + report.sources.map { "\($0.place.rawValue) \($0.isAvailable)" }
    }
}

/// The client's own resolution type.
enum Resolution {
    case shared(OpenUDIDKit.Identifier)
    case none
}

@Suite struct PublicAPIClientTests {
    /// A private home, so the client's files never touch the user's.
    static func configuration() throws -> OpenUDID.Configuration {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("openudid-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        return OpenUDID.Configuration(
            usesSelections: false, namespace: "api", mirror: .none,
            environment: [
                "HOME": home.path, "XDG_DATA_HOME": home.path + "/data",
                "XDG_CONFIG_HOME": home.path + "/config", "XDG_CACHE_HOME": home.path + "/cache"
            ])
    }

    @Test func aClientWithItsOwnIdentifierReportAndResolutionUsesTheLibrary() throws {
        let udid = try OpenUDID(app: "com.example.client", configuration: Self.configuration())
        let mine = Identifier(shared: udid.value(), appScoped: udid.appScopedValue())
        #expect(mine.shared == udid.value())
        #expect(mine.shared.hex.count == 40)
        let report = Report(udid.resolve())
        #expect(report.lines.first == "id \(mine.shared.hex)")
        let resolution = Resolution.shared(mine.shared)
        if case .shared(let shared) = resolution { #expect(!shared.isOptedOut) }
    }

    @Test func theReportDecodesBackFromItsJSON() throws {
        let udid = try OpenUDID(app: "com.example.client", configuration: Self.configuration())
        let report = udid.resolve()
        let json = try JSONEncoder().encode(report)
        let decoded = try JSONDecoder().decode(OpenUDIDKit.Report.self, from: json)
        #expect(decoded == report)
        #expect(decoded.origin == .generated)
        #expect(decoded.mirrorStore == nil)
        #expect(decoded.sources.contains(.notUsed(.mirror, "no mirror chosen")))
        // Absent values are written as null, so every report has every key.
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(object.keys.contains("slot") && object["slot"] is NSNull)
        #expect(object.keys.contains("decidedBy"))
    }
}
