// The README's example, compiled. ReadmeExampleTests checks that the README
// still shows exactly these lines.
import OpenUDIDKit

// The comments stay aligned, as the README shows them:
// swift-format-ignore
func readmeExample() async throws {
    let udid = try OpenUDID(app: "com.acme.notes")
    print(await udid.value())                      // 40 hex digits, shared by every app
    print(await udid.appScopedValue())             // a UUID for this app alone

    let participation = await udid.participate()   // serve a slot, follow the others
    for await change in participation.changes {
        print("now", change.identifier, "from", change.report.document.origin.rawValue)
    }
}
