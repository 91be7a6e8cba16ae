import Foundation
import OpenUDIDKit
import TestSupport
import Testing

/// The per-app derivation, checked against values computed independently with
/// Python's `hmac` and `hashlib`, and against systemd itself where it is installed.
@Suite struct AppScopedIdentifierTests {
    private static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    private static let counting = Array(UInt8(0)..<20)
    private static let other = bytes("0123456789abcdef0123456789abcdef01234567")

    // Expected values from:
    // python3 -c 'import hmac,hashlib; b=bytearray(hmac.new(KEY, MSG, hashlib.sha256).digest()[:16]);
    //   b[6]=(b[6]&0x0F)|0x40; b[8]=(b[8]&0x3F)|0x80; print(b.hex())'
    @Test(arguments: [
        (counting, "com.acme.notes", "63399cd3-47fd-4ef8-9157-e3ae2af46913"),
        (counting, "com.acme.mail", "363ab84e-1bd7-43ae-bcde-3a9aff417229"),
        (other, "org.indie.editor", "78781864-6af6-4e56-83cf-49f690c589d7"),
        (other, "com.acme.café", "e42f43a3-8ac6-428a-bf1e-90c997a45582")
    ])
    func matchesIndependentlyComputedValues(shared: [UInt8], appID: String, expected: String) {
        #expect(AppScopedIdentifier(shared: shared, appID: appID).uuidString == expected)
    }

    @Test func reproducesTheSystemdConstruction() {
        // systemd's own inputs: a 16-byte machine ID and a 16-byte application UUID.
        let derived = AppScopedIdentifier(
            key: Self.bytes("00112233445566778899aabbccddeeff"),
            message: Self.bytes("0e7a8a944a3b4c5a8d2e6f1b2c3d4e5f"))
        #expect(derived.uuidString == "18e7250a-de63-42a8-96ed-61cfbd5d4c7b")
    }

    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-id128")
                && FileManager.default.fileExists(atPath: "/etc/machine-id")))
    func agreesWithSystemdID128OnThisMachine() throws {
        let app = "0e7a8a944a3b4c5a8d2e6f1b2c3d4e5f"
        let result = try runCommand(
            URL(fileURLWithPath: "/usr/bin/systemd-id128"), ["-u", "-a", app, "machine-id"],
            environment: [:])
        try #require(result.status == 0, "\(result.standardError)")
        let machineID = try String(contentsOfFile: "/etc/machine-id", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let derived = AppScopedIdentifier(key: Self.bytes(machineID), message: Self.bytes(app))
        #expect(derived.uuidString == result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func setsVersionFourAndTheRFC4122Variant() {
        var generator = SeededRandom.announced("setsVersionFourAndTheRFC4122Variant")
        for index in 0..<200 {
            let shared = (0..<20).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let derived = AppScopedIdentifier(shared: shared, appID: "com.acme.app\(index)")
            #expect(derived.bytes.count == 16)
            #expect(derived.bytes[6] >> 4 == 4)
            #expect(derived.bytes[8] >> 6 == 0b10)
            let text = derived.uuidString
            #expect(text.count == 36)
            #expect(text == text.lowercased())
            #expect(UUID(uuidString: text) != nil)
            #expect(Array(text)[14] == "4")
        }
    }

    @Test func isStablePerAppAndDistinctAcrossAppsAndSharedIdentifiers() {
        let notes = AppScopedIdentifier(shared: Self.counting, appID: "com.acme.notes")
        #expect(notes == AppScopedIdentifier(shared: Self.counting, appID: "com.acme.notes"))
        #expect(notes != AppScopedIdentifier(shared: Self.counting, appID: "com.acme.mail"))
        #expect(notes != AppScopedIdentifier(shared: Self.counting, appID: "com.Acme.Notes"), "app IDs are not normalized")
        #expect(notes != AppScopedIdentifier(shared: Self.other, appID: "com.acme.notes"))
    }
}
