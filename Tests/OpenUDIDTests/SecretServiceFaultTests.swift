import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

@Suite struct SecretServiceFaultTests {
    enum Fault: String, CaseIterable, Sendable {
        case notRunning, locked, killedMidCall
    }

    @Test(arguments: Fault.allCases)
    func aFailingSecretServiceNeverGetsAFreshIdentifierOverTheRealOne(_ fault: Fault) throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let session = try TestSession(display: nil, home: bus.home, extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let secretService = ["--mirror", "secret-service"]
        let shared = try session.get("com.acme.notes", secretService)
        // Only the keyring holds the identifier now.
        #expect(try session.run(["remove-app", "com.acme.notes"]).status == 0)
        func stored() throws -> String? {
            let lookup = try runCommand(
                try Tools.find("secret-tool"),
                ["lookup", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme"],
                environment: bus.environment())
            return try? SlotRecord.parse(Data(lookup.standardOutput.utf8)).id.hex
        }

        let report: [String: Any]
        switch fault {
        case .notRunning:
            try bus.killKeyring()
            report = try session.report("com.acme.photos", secretService)
        case .locked:
            try bus.lockDefaultCollection()
            report = try session.report("com.acme.photos", secretService)
        case .killedMidCall:
            bus.suspendKeyring()
            let connections = try bus.connectionCount()
            let running = try ChildProcess(
                Tools.product("openudid"),
                ["get", "--app", "com.acme.photos", "--json"] + secretService + session.commonArguments,
                environment: session.environment)
            // The call is under way once the process has joined the bus.
            #expect(eventually { (try? bus.connectionCount()).map { $0 > connections } == true }, "openudid get never joined the bus")
            try bus.killKeyring()
            var lines: [String] = []
            while let line = running.nextLine(timeout: 10) { lines.append(line) }
            #expect(running.wait(timeout: 30) == 0, "\(running.standardError)")
            report = try #require(try JSONSerialization.jsonObject(with: Data(lines.joined(separator: "\n").utf8)) as? [String: Any])
            // The call ended with the daemon, not at its deadline, which the report would name.
            #expect(report.source("mirror")?.detail.contains("did not answer") == false, "\(String(describing: report.source("mirror")))")
        }

        #expect(report.source("mirror")?.state == "unavailable", "\(String(describing: report.source("mirror")))")
        #expect(report.repair("mirror")?.outcome == "skipped", "\(String(describing: report.repair("mirror")))")

        // The service comes back: it still holds the real identifier, which wins again.
        switch fault {
        case .notRunning, .killedMidCall: try bus.startKeyring(password: "correct horse")
        case .locked: try bus.unlock(password: "correct horse")
        }
        #expect(try stored() == shared)
        #expect(try session.get("com.acme.photos", secretService) == shared)
        #expect(try stored() == shared)
    }
}

// MARK: - Helpers

/// `openudid get --json` that is expected to save the identifier nowhere: exit status 3, a warning, the report.
