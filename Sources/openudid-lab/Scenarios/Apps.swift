/// An app of the lab, known by its reverse-DNS id.
struct LabApp: Sendable, Hashable {
    /// The app id, such as `com.acme.notes`.
    let id: String
    /// The short name tables use, such as `notes`.
    let name: String

    /// The vendor the library derives from the id: its first two parts.
    var vendor: String { id.split(separator: ".").prefix(2).joined(separator: ".") }

    /// Two apps of one vendor.
    static let notes = LabApp(id: "com.acme.notes", name: "notes")
    static let photos = LabApp(id: "com.acme.photos", name: "photos")
    /// An app of another vendor.
    static let chess = LabApp(id: "org.indie.chess", name: "chess")
    /// Group two, which forms on another machine before it meets group one.
    static let sketch = LabApp(id: "net.tinker.sketch", name: "sketch")
    static let maps = LabApp(id: "net.tinker.maps", name: "maps")

    /// Every app, in the order tables list them.
    static let all = [notes, photos, chess, sketch, maps]
    /// Group one: the apps most scenarios use.
    static let groupOne = [notes, photos, chess]
    /// Group two.
    static let groupTwo = [sketch, maps]

    /// Every vendor of the lab's apps (whose mirror items a wipe deletes).
    static var vendors: [String] {
        var seen: [String] = []
        for app in all where !seen.contains(app.vendor) { seen.append(app.vendor) }
        return seen
    }
}
