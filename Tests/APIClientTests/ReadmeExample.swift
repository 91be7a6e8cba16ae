// The README's example, compiled with the tests. ReadmeExampleTests checks that
// the README still shows exactly these lines, and builds the README's example
// as pasted, `@main` included, in a package of its own; here it has no `@main`,
// as the test runner brings its own entry point.
import OpenUDIDKit

// The comments stay aligned, as the README shows them:
// swift-format-ignore
struct Notes {
    static func main() async throws {
        let udid = try OpenUDID(app: "com.acme.notes")
        print(await udid.value())                      // 40 hex digits, shared by every app
        print(await udid.appScopedValue())             // a UUID for this app alone

        let participation = try await udid.participate() // serve a slot, follow the others
        for await change in participation.changes {
            print("now", change.identifier, "from", change.report.origin.rawValue)
        }
    }
}
