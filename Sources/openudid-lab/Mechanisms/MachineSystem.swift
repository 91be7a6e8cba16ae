import Foundation

/// What a lab machine's system holds besides the user's home: its own copies of
/// the parts of `/sys/class/net` and of the system's settings that the
/// system-held columns read.
///
/// Everything lives in the machine's directory of the lab's private tree, beside
/// its `etc/machine-id`; nothing of the real machine is read.
extension Machine {
    /// The machine's root directory: the one that holds its `etc/`.
    var systemRoot: String {
        ((machineIDPath as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
    }

    /// The machine's network interfaces, as `/sys/class/net` lists them.
    var networkInterfaces: String { systemRoot + "/sys/class/net" }

    /// Where the system keeps its settings: the advertising identifier and the vendor identifiers.
    var systemSettings: String { systemRoot + "/var/lib/settings" }

    /// Gives the machine its network interfaces: loopback, a wired one with a
    /// burned-in address made up for the run, and a wireless one whose address is
    /// drawn at every boot; then boots it.
    func installHardware() throws(LabError) {
        try writeInterface("lo", address: "00:00:00:00:00:00", assignType: 0)
        try writeInterface("eth0", address: Self.randomAddress(locallyAdministered: false), assignType: 0)
        try boot()
    }

    /// What the system does at boot that a column can see: the wireless interface
    /// gets a new random, locally administered address.
    func boot() throws(LabError) {
        try writeInterface("wlan0", address: Self.randomAddress(locallyAdministered: true), assignType: 1)
    }

    /// Forgets every setting the system held for the user, as erasing all content and settings does.
    func eraseSettings() {
        try? FileManager.default.removeItem(atPath: systemSettings)
    }

    /// The address of the first interface in name order, loopback aside, whose
    /// `addr_assign_type` is `assignType` (0 permanent, 1 random), as the system reports it.
    func hardwareAddress(assignType: Int) throws(LabError) -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: networkInterfaces)) ?? []
        for name in names.sorted() where name != "lo" {
            let directory = networkInterfaces + "/" + name
            guard let type = Self.read(directory + "/addr_assign_type").flatMap({ Int($0) }), type == assignType,
                let address = Self.read(directory + "/address")
            else { continue }
            return address
        }
        throw LabError("\(networkInterfaces) lists no interface whose addr_assign_type is \(assignType)")
    }

    /// The machine id exactly as its file holds it: what an app that reads `/etc/machine-id` sees.
    func rawMachineID() throws(LabError) -> String {
        guard let text = Self.read(machineIDPath), text.utf8.count == 32 else {
            throw LabError("\(machineIDPath) does not hold a machine id")
        }
        return text
    }

    // MARK: The advertising identifier

    private var advertisingFile: String { systemSettings + "/advertising/identifier" }
    private var limitFile: String { systemSettings + "/advertising/limit-ad-tracking" }

    /// The user's advertising identifier: all zeros while the user limits ad
    /// tracking; otherwise the one the system holds, made on first request.
    func advertisingIdentifier() throws(LabError) -> String {
        if FileManager.default.fileExists(atPath: limitFile) { return optedOutUUID }
        if let value = Self.read(advertisingFile), UUID(uuidString: value) != nil { return value }
        let value = UUID().uuidString.lowercased()
        try Self.write(value + "\n", to: advertisingFile)
        return value
    }

    /// The user resets the advertising identifier: the next request gets a new one.
    func resetAdvertisingIdentifier() {
        try? FileManager.default.removeItem(atPath: advertisingFile)
    }

    /// The user limits ad tracking, or allows it again.
    func limitAdTracking(_ limited: Bool) throws(LabError) {
        if limited {
            try Self.write("1\n", to: limitFile)
        } else {
            try? FileManager.default.removeItem(atPath: limitFile)
        }
    }

    // MARK: The vendor identifiers

    private func vendorDirectory(_ vendor: String) -> String { systemSettings + "/vendors/" + vendor }

    /// Records that `app` is installed, as the system does when an app is installed.
    func recordInstallation(of app: LabApp) throws(LabError) {
        try Self.write(app.id + "\n", to: vendorDirectory(app.vendor) + "/apps/" + app.id)
    }

    /// Records that `app` was removed; when it was its vendor's last app, the system
    /// forgets the vendor's identifier.
    func recordRemoval(of app: LabApp) {
        let directory = vendorDirectory(app.vendor)
        try? FileManager.default.removeItem(atPath: directory + "/apps/" + app.id)
        let left = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/apps")) ?? []
        if left.isEmpty { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// The identifier the system holds for `app`'s vendor, made on first request.
    func vendorIdentifier(for app: LabApp) throws(LabError) -> String {
        let file = vendorDirectory(app.vendor) + "/identifier"
        if let value = Self.read(file), UUID(uuidString: value) != nil { return value }
        let value = UUID().uuidString.lowercased()
        try Self.write(value + "\n", to: file)
        return value
    }

    // MARK: Files

    private func writeInterface(_ name: String, address: String, assignType: Int) throws(LabError) {
        let directory = networkInterfaces + "/" + name
        try Self.write(address + "\n", to: directory + "/address")
        try Self.write("\(assignType)\n", to: directory + "/addr_assign_type")
    }

    /// Six random bytes as an address: unicast, and globally unique (a burned-in
    /// address) or locally administered (a randomised one).
    private static func randomAddress(locallyAdministered: Bool) -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<6).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[0] &= 0b1111_1100
        if locallyAdministered { bytes[0] |= 0b0000_0010 }
        return bytes.map { String(format: "%02x", $0) }.joined(separator: ":")
    }

    private static func read(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func write(_ text: String, to path: String) throws(LabError) {
        try makeDirectory((path as NSString).deletingLastPathComponent)
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw LabError("cannot write \(path): \(error.localizedDescription)")
        }
    }
}
