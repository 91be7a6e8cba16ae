import Foundation
import TestSupport
import Testing

/// What include/openudid.h promises beyond single calls, checked by C
/// programs compiled against the installed library: handles that cannot be
/// confused.
@Suite struct CContractTests {
    /// Runs `program` with `arguments` in `environment` and returns its lines, which must end in "done".
    private func lines(of program: URL, _ arguments: [String] = [], environment: [String: String]) throws -> [String] {
        let result = try runCommand(program, arguments, environment: try Installation.shared.get().environment(environment))
        #expect(result.status == 0, "\(program.lastPathComponent) exited \(result.status): \(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.last == "done", "\(program.lastPathComponent) stopped early: \(result.standardOutput)\(result.standardError)")
        return lines
    }

    /// A private home without a display.
    private func environment(_ home: PrivateHome) -> [String: String] {
        var environment = home.environment()
        environment["DISPLAY"] = nil
        return environment
    }

    @Test(arguments: [false, true])
    func closingAHandleTwiceNeverClosesOneOpenedSince(underAddressSanitizer: Bool) throws {
        let home = try PrivateHome()
        let program = try (underAddressSanitizer ? Installation.handlesUnderASan : Installation.handles).get()
        var environment = environment(home)
        // Leak checking stays on: the library must not leak a handle either.
        if underAddressSanitizer { environment["ASAN_OPTIONS"] = "abort_on_error=0:halt_on_error=1" }
        let lines = try lines(of: program, environment: environment)
        #expect(lines == ["rounds 100", "reused 0", "closed-live 0", "done"])
    }
}
