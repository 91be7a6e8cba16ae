import FoundationEssentials

/// An identifier for one application, derived from the shared identifier.
///
/// Each application gets a stable value of its own, and no one holding two apps'
/// values can tell that they come from the same shared identifier, or recover it.
/// The construction is systemd's `sd_id128_get_machine_app_specific()`, with the
/// shared identifier in place of the machine ID and the app ID's text in place of
/// the application UUID. As a protocol rule, for a shared identifier `S` (20 raw
/// bytes) and an app ID `A`:
///
/// 1. key = all 20 raw bytes of `S` (not its 40-character hex form);
/// 2. message = the UTF-8 bytes of `A` exactly as given: no terminator, no case
///    folding or other normalization, so `com.Acme.Notes` and `com.acme.notes`
///    give different values;
/// 3. `b` = the first 16 bytes of HMAC-SHA256(key, message);
/// 4. `b[6] = (b[6] & 0x0F) | 0x40` (version 4) and `b[8] = (b[8] & 0x3F) | 0x80`
///    (RFC 4122 variant);
/// 5. written as a lowercase UUID, 8-4-4-4-12 hex digits.
///
/// For `S` = `000102…13` and `A` = `com.acme.notes` the result is
/// `63399cd3-47fd-4ef8-9157-e3ae2af46913`. When `S` is the opt-out value (all
/// zeros) the result is the nil UUID instead. docs/PROTOCOL.md §11 states the
/// rule and docs/vectors/app-scoped.json holds vectors another implementation
/// can check itself against.
package struct AppScopedIdentifier: Sendable, Hashable, CustomStringConvertible {
    /// The 16 bytes, version and variant bits included.
    package let bytes: [UInt8]

    /// Derives the identifier of `appID` from the shared identifier, or the
    /// nil UUID when the user opted out.
    ///
    /// - Parameters:
    ///   - shared: The shared identifier; `Identifier.optedOut` gives the nil UUID.
    ///   - appID: The application's reverse-DNS ID, used byte for byte as given.
    package init(shared: Identifier, appID: String) {
        if shared.isOptedOut {
            self.init(uuidBytes: [UInt8](repeating: 0, count: 16))
        } else {
            self.init(shared: shared.bytes, appID: appID)
        }
    }

    private init(uuidBytes: [UInt8]) {
        bytes = uuidBytes
    }

    /// Derives the identifier of `appID` from the shared identifier's raw bytes.
    ///
    /// - Parameters:
    ///   - shared: The shared identifier's 20 raw bytes.
    ///   - appID: The application's reverse-DNS ID, such as `com.acme.notes`.
    /// - Precondition: `shared` holds exactly 20 bytes.
    package init(shared: [UInt8], appID: String) {
        precondition(shared.count == 20, "a shared identifier has 20 bytes, not \(shared.count)")
        self.init(key: shared, message: Array(appID.utf8))
    }

    /// The construction over any key and message.
    ///
    /// systemd uses it with the 16-byte machine ID as the key and an application's
    /// 16-byte UUID as the message; `systemd-id128 -a <app-uuid> machine-id` prints
    /// the same value.
    package init(key: [UInt8], message: [UInt8]) {
        var digest = SHA256.hmac(key: key, message: message)
        digest[6] = (digest[6] & 0x0F) | 0x40
        digest[8] = (digest[8] & 0x3F) | 0x80
        bytes = Array(digest.prefix(16))
    }

    /// The identifier as a lowercase UUID, such as `63399cd3-47fd-4ef8-9157-e3ae2af46913`.
    package var uuidString: String {
        let hex = bytes.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }
        return [0..<4, 4..<6, 6..<8, 8..<10, 10..<16]
            .map { hex[$0].joined() }
            .joined(separator: "-")
    }

    /// The UUID string.
    package var description: String { uuidString }

    /// The identifier as a `UUID`.
    package var uuid: UUID {
        let b = bytes
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}
