import FoundationEssentials
import Glibc
import InputGate
import Synchronization
import XSelection

/// Gathers candidates from every source, holds the vote, and repairs what the
/// app owns. One engine per `OpenUDID` instance; calls are serialised by the
/// owner of the engine.
///
/// Gathering is in `Engine+Gather.swift`, the vote and the generation of a new
/// identifier in `Engine+Generate.swift`, and the repair of the places the app
/// keeps a copy in in `Engine+Repair.swift`. The engine reads and writes those
/// places through `RecordPlace` alone.
final class Engine: @unchecked Sendable {
    // `reader` is touched only with `readerLock` held, `mirrorChoice` only with
    // `mirrorLock`: two locks, so that reading the mirror never waits for the
    // reader's X connection to be set up (up to 2 s), which it did for 70 ms
    // in an app started beside thirty others.
    private let readerLock = Mutex(())
    private let mirrorLock = Mutex(())
    let app: AppIdentity
    let configuration: OpenUDID.Configuration
    let paths: StoragePaths
    let slots: SelectionSlots
    let fileSlots: FileSlotStore
    let localCache: LocalCache
    /// This app's file slot.
    let fileSlot: any RecordPlace
    /// This app's local cache, as bytes.
    let localCachePlace: any RecordPlace
    /// What every write of this app's own copies passes: no erasure since it read.
    let erasureFence: ErasureFence
    /// The file system every file call goes through.
    var fileSystem: FileSystem { configuration.fileSystem }
    private var reader: SelectionReader?
    private var mirrorChoice: (any VendorMirrorStore)??

    init(app: AppIdentity, configuration: OpenUDID.Configuration) throws(OpenUDIDError) {
        guard (1...10_000).contains(configuration.slotCount) else {
            throw OpenUDIDError(.invalidOption, "slot count \(configuration.slotCount) is out of range; use 1 to 10000")
        }
        self.app = app
        self.configuration = configuration
        do {
            paths = try StoragePaths(environment: configuration.environment, namespace: configuration.namespace)
        } catch {
            throw OpenUDIDError(error)
        }
        slots = SelectionSlots(namespace: configuration.namespace, count: configuration.slotCount)
        fileSlots = FileSlotStore(paths: paths, fileSystem: configuration.fileSystem)
        localCache = LocalCache(app: app, paths: paths, fileSystem: configuration.fileSystem)
        erasureFence = ErasureFence(
            path: paths.erasureLock, root: paths.sharedHome,
            consentFile: configuration.requiresConsent ? paths.consentFile(for: app) : nil,
            enabled: configuration.usesFiles, fileSystem: configuration.fileSystem)
        fileSlot = FencedPlace(place: FileSlotPlace(store: fileSlots, app: app.id), fence: erasureFence)
        localCachePlace = FencedPlace(place: LocalCachePlace(localCache), fence: erasureFence)
    }

    /// The mirror store, chosen once (the automatic choice asks the session bus).
    var mirror: (any VendorMirrorStore)? {
        mirrorLock.withLock { _ in
            if let chosen = mirrorChoice { return chosen }
            let chosen = Self.store(
                for: configuration.mirror, paths: paths, environment: configuration.environment, fileSystem: fileSystem,
                deadline: configuration.secretServiceDeadline)
            mirrorChoice = .some(chosen)
            return chosen
        }
    }

    /// The vendor's mirror store for `choice`. The session bus is the one of
    /// `environment`, so a handle configured with another environment (a test,
    /// the lab) talks to that environment's Secret Service.
    static func store(
        for choice: MirrorChoice, paths: StoragePaths, environment: [String: String], fileSystem: FileSystem = .system,
        deadline: Duration = .seconds(2)
    ) -> (any VendorMirrorStore)? {
        let bus = SessionBus.address(in: environment, fileSystem: fileSystem)
        let address = try? bus.get()
        switch choice {
        case .file: return FileVendorMirror(paths: paths, fileSystem: fileSystem)
        case .secretService: return SecretServiceMirror(busAddress: address, namespace: paths.namespace, deadline: deadline)
        case .automatic:
            // The file store says why the Secret Service was passed over, for the report.
            var files = FileVendorMirror(paths: paths, fileSystem: fileSystem)
            guard let address else {
                // No bus in this environment: no Secret Service to ask.
                if case .failure(let failure) = bus { files.passedOver = failure.message }
                return files
            }
            // A locked or hung keyring still counts: it may hold the mirror, it just
            // cannot be read now (the report says so), and falling back to files
            // would fork the vendor's value.
            switch SecretServiceMirror.probe(busAddress: address) {
            case .ready, .locked, .unresponsive:
                return SecretServiceMirror(busAddress: address, namespace: paths.namespace, deadline: deadline)
            case .unusable(let failure), .unreachable(let failure):
                files.passedOver = failure.message
                return files
            }
        default: return nil // `none`, or a store this version does not know
        }
    }

    /// The vendor's mirror as a place, if a mirror is used.
    var mirrorPlace: (any RecordPlace)? {
        mirror.map { FencedPlace(place: VendorMirrorPlace(store: $0, vendor: app.vendor), fence: erasureFence) }
    }

    /// Whether the user opted out for every app.
    var userOptedOut: Bool {
        fileSystem.exists(paths.optOutMarker)
    }

    func connectedReader(_ display: String) throws(XSelectionError) -> SelectionReader {
        try readerLock.withLock { _ throws(XSelectionError) in
            if let reader { return reader }
            let opened = try SelectionReader(display: display)
            reader = opened
            return opened
        }
    }

    func dropReader() {
        readerLock.withLock { _ in
            reader?.close()
            reader = nil
        }
    }

    /// The record this app serves in its selection slot for `report`.
    func slotRecord(for report: Report) -> SlotRecord {
        let now = Milliseconds.since1970(Date())
        if report.optOut != nil {
            return SlotRecord(
                id: .optedOut, app: app.id, vendor: app.vendor, born: now, written: now, optOut: true, generation: report.generation)
        }
        return SlotRecord(
            id: report.identifier, app: app.id, vendor: app.vendor, born: report.born ?? now, written: now, optOut: false,
            generation: report.generation)
    }
}
