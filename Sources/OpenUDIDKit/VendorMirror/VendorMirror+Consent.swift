import FoundationEssentials

extension Engine {
    /// Deletes the vendor's mirror item when it carries this app's id: what
    /// withdrawing this app's consent removes from the mirror.
    ///
    /// A record in the mirror names the app that wrote it. When that is this app,
    /// or when the item cannot be read (a keyring that keeps it from each app, such
    /// as KeePassXC), the item is deleted: the vendor's other apps that still take
    /// part hold the identifier in their own copies and write the mirror again, in
    /// their own name, at their next resolution. An item written by another app of
    /// the vendor holds nothing of this one and is left alone.
    ///
    /// - Throws: `StoreUnavailable` when the item may carry this app's id and cannot
    ///   be deleted (a locked keyring); the message says where it stays.
    func removeMirrorWrittenByThisApp() throws(StoreUnavailable) {
        guard let mirror else { return }
        let vendor = app.vendor
        switch mirror.read(vendor: vendor) {
        case .absent:
            return
        case .found(let bytes):
            if let record = try? SlotRecord.parse(bytes), record.app != app.id { return }
        case .unavailable:
            break
        }
        do {
            try mirror.remove(vendor: vendor)
        } catch {
            throw StoreUnavailable(
                error.kind,
                """
                the \(mirror.location(vendor: vendor)) may still hold the identifier with the id of \(app.id): \
                \(error.message); withdraw again once it can be deleted, or run openudid forget --all
                """, errno: error.errno)
        }
    }
}
