import DesktopSandbox
import Foundation
import FoundationXML

/// KeePassXC as the Secret Service, with its own defaults, on a private session
/// bus and a private Xvfb, for one test (shared/notes: real desktops).
///
/// Its database has one group, "SecretService", exposed to the Secret Service;
/// KeePassXC's configuration turns on nothing but the Secret Service integration
/// (and no tray icon, which Xvfb has nowhere to put), so "Confirm when passwords
/// are retrieved by clients", "Unlock before search" and the Recycle Bin are as
/// a new user has them.
public final class PrivateKeePassXC: Sendable {
    /// The database's password.
    public static let password = "correct horse"

    /// The private HOME and XDG directories.
    public let home: PrivateHome
    /// The X server KeePassXC's windows go to.
    public let xServer: PrivateXServer
    /// The database file.
    public let database: String
    private let bus: SessionBus
    private let keepassxc: ChildProcess

    /// The bus address, as `DBUS_SESSION_BUS_ADDRESS` holds it.
    public var address: String { bus.address }

    /// Creates the database and starts KeePassXC on it, unlocked, and waits until it owns the Secret Service's name.
    ///
    /// - Parameters:
    ///   - confirmAccess: KeePassXC's "Confirm when passwords are retrieved by clients" (on by default).
    ///   - timeout: How long KeePassXC may take to come up.
    /// - Throws: `HarnessError` when a tool is missing or KeePassXC does not come up.
    public init(confirmAccess: Bool = true, timeout: TimeInterval = 30) throws {
        home = try PrivateHome()
        bus = try SessionBus(home: home.home, timeout: timeout)
        xServer = try PrivateXServer()
        let cli = try Tools.find("keepassxc-cli")
        let root = home.root.path
        let base = root + "/base.kdbx"
        database = root + "/secrets.kdbx"
        let password = Self.password
        try Self.check(
            runCommand(cli, ["db-create", "-q", "-p", base], environment: home.environment(), input: "\(password)\n\(password)\n"))
        try Self.check(runCommand(cli, ["mkdir", "-q", base, "SecretService"], environment: home.environment(), input: "\(password)\n"))
        let exported = try runCommand(cli, ["export", "-q", "-f", "xml", base], environment: home.environment(), input: "\(password)\n")
        try Self.check(exported)
        let xml = try Self.exposingGroup("SecretService", in: exported.standardOutput)
        try xml.write(toFile: root + "/exposed.xml", atomically: true, encoding: .utf8)
        try Self.check(
            runCommand(
                cli, ["import", "-q", "-p", root + "/exposed.xml", database], environment: home.environment(),
                input: "\(password)\n\(password)\n"))
        let configuration = home.home.config + "/keepassxc"
        try makeDirectory(configuration)
        try """
        [General]
        ConfigVersion=2
        SingleInstance=false
        [GUI]
        ShowTrayIcon=false
        [FdoSecrets]
        Enabled=true
        \(confirmAccess ? "" : "ConfirmAccessItem=false")

        """.write(toFile: configuration + "/keepassxc.ini", atomically: true, encoding: .utf8)
        keepassxc = try ChildProcess(
            try Tools.find("keepassxc"), ["--pw-stdin", database],
            environment: bus.environment(display: xServer.display, extra: ["QT_QPA_PLATFORM": "xcb"]),
            input: .data(Data("\(password)\n".utf8)), reading: .discarded)
        try bus.waitForSecretService(owned: true, timeout: timeout)
        guard waitUntil(timeout: timeout, { (try? self.isUnlocked()) == true }) else {
            throw HarnessError("KeePassXC did not open its database within \(Int(timeout)) s: \(keepassxc.standardError)")
        }
    }

    /// The environment of a process on this bus and display, plus `extra`.
    public func environment(extra: [String: String] = [:]) -> [String: String] {
        bus.environment(display: xServer.display, extra: extra)
    }

    /// Locks the database as its Lock button does, and waits until the Secret Service says so.
    public func lock(timeout: TimeInterval = 10) throws {
        _ = try send("org.keepassxc.KeePassXC.MainWindow", "/keepassxc", "org.keepassxc.KeePassXC.MainWindow.lockAllDatabases", [])
        guard waitUntil(timeout: timeout, { (try? self.isUnlocked()) == false }) else {
            throw HarnessError("KeePassXC's database is still unlocked \(Int(timeout)) s after lockAllDatabases")
        }
    }

    /// Unlocks the database with its password, as the user would, and waits until the Secret Service says so.
    public func unlock(timeout: TimeInterval = 10) throws {
        _ = try send(
            "org.keepassxc.KeePassXC.MainWindow", "/keepassxc", "org.keepassxc.KeePassXC.MainWindow.openDatabase",
            ["string:\(database)", "string:\(Self.password)"])
        guard waitUntil(timeout: timeout, { (try? self.isUnlocked()) == true }) else {
            throw HarnessError("KeePassXC's database is still locked \(Int(timeout)) s after openDatabase")
        }
    }

    /// Whether the default collection is unlocked, as any client asks it.
    public func isUnlocked() throws -> Bool {
        let alias = try send(
            "org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.ReadAlias", ["string:default"])
        guard let path = alias.components(separatedBy: "\"").dropFirst().first, path != "/" else {
            throw HarnessError("KeePassXC has no default collection: \(alias)")
        }
        let reply = try send(
            "org.freedesktop.secrets", path, "org.freedesktop.DBus.Properties.Get",
            ["string:org.freedesktop.Secret.Collection", "string:Locked"])
        return reply.contains("boolean false")
    }

    /// The titles of the top-level windows on the private X server, as `xwininfo -root -children` lists them.
    public func windowTitles() throws -> [String] {
        let result = try runCommand(try Tools.find("xwininfo"), ["-root", "-children"], environment: environment())
        guard result.status == 0 else { throw HarnessError("xwininfo failed: \(result.standardError)") }
        return result.standardOutput.split(separator: "\n").compactMap { line in
            guard let open = line.firstIndex(of: "\""), let close = line[line.index(after: open)...].firstIndex(of: "\"") else {
                return nil
            }
            return String(line[line.index(after: open)..<close])
        }
    }

    /// The titles of the dialogs KeePassXC shows on its X server ("Unlock Database",
    /// "KeePassXC - Access Request", any other prompt), once its windows have settled:
    /// read until two reads a quarter of a second apart list the same windows. Its
    /// main window and Qt's helper windows come and go as it starts, saves or locks,
    /// which is why a test compares dialogs, not every window.
    public func dialogTitles(timeout: TimeInterval = 10) throws -> [String] {
        var last = try windowTitles().sorted()
        _ = try waitUntil(timeout: timeout, interval: 0.25) {
            let now = try windowTitles().sorted()
            defer { last = now }
            return now == last
        }
        let dialogWords = ["Unlock Database", "Access Request", "Confirm", "Prompt", "Password"]
        return last.filter { title in dialogWords.contains { title.localizedCaseInsensitiveContains($0) } }
    }

    /// One entry of the database, wherever it is (the Recycle Bin included).
    public struct Entry: Sendable, CustomStringConvertible {
        /// The groups from the root down, such as `["Passwords", "Recycle Bin"]`.
        public let groups: [String]
        /// The entry's title.
        public let title: String
        /// Its password (the Secret Service secret), then those of its history, newest last.
        public let password: String
        /// The passwords its history keeps.
        public let history: [String]

        /// Whether it is in the Recycle Bin.
        public var isRecycled: Bool { groups.contains("Recycle Bin") }

        public var description: String { "\(groups.joined(separator: "/"))/\(title) (history: \(history.count))" }
    }

    /// Every entry of the database file as `keepassxc-cli export` reads it: what
    /// the user's database holds, the Recycle Bin and each entry's history included.
    public func entries() throws -> [Entry] {
        let exported = try runCommand(
            try Tools.find("keepassxc-cli"), ["export", "-q", "-f", "xml", database], environment: home.environment(),
            input: "\(Self.password)\n")
        try Self.check(exported)
        return try KeePassXMLEntries(Data(exported.standardOutput.utf8)).entries
    }

    /// The database's entries once they satisfy `condition`, read again and again
    /// until they do: KeePassXC saves a change made over the Secret Service about a
    /// second later, not at once (many seconds on a busy machine).
    ///
    /// - Returns: The entries of the first read that satisfies `condition`, or of the
    ///   last read when none did within `timeout` (the test's expectations then fail).
    public func entries(timeout: TimeInterval = 60, until condition: ([Entry]) -> Bool) throws -> [Entry] {
        var latest: [Entry] = []
        _ = try waitUntil(timeout: timeout, interval: 0.1) {
            latest = try entries()
            return condition(latest)
        }
        return latest
    }

    // MARK: Plumbing

    private func send(_ destination: String, _ path: String, _ method: String, _ arguments: [String]) throws -> String {
        let result = try runCommand(
            try Tools.find("dbus-send"), ["--session", "--print-reply", "--dest=\(destination)", path, method] + arguments,
            environment: environment(), timeout: 10)
        guard result.status == 0 else { throw HarnessError("dbus-send \(method) failed: \(result.standardError)") }
        return result.standardOutput
    }

    private static func check(_ result: CommandResult) throws {
        guard result.status == 0 else { throw HarnessError("keepassxc-cli failed (\(result.status)): \(result.standardError)") }
    }

    /// The exported XML with the group named `group` exposed to the Secret Service:
    /// its UUID, as `{8-4-4-4-12}` text, in the database's custom data.
    private static func exposingGroup(_ group: String, in xml: String) throws -> String {
        guard let name = xml.range(of: "<Name>\(group)</Name>"),
            let uuidEnd = xml.range(of: "</UUID>", options: .backwards, range: xml.startIndex..<name.lowerBound),
            let uuidStart = xml.range(of: "<UUID>", options: .backwards, range: xml.startIndex..<uuidEnd.lowerBound),
            let bytes = Data(base64Encoded: String(xml[uuidStart.upperBound..<uuidEnd.lowerBound])), bytes.count == 16
        else { throw HarnessError("the exported database has no group \(group)") }
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex.dropFirst(range.lowerBound).prefix(range.count))
        }
        let uuid = "{" + parts.joined(separator: "-") + "}"
        let customData = "<CustomData><Item><Key>FDO_SECRETS_EXPOSED_GROUP</Key><Value>\(uuid)</Value></Item></CustomData>"
        guard let meta = xml.range(of: "<Meta>") else { throw HarnessError("the exported database has no <Meta>") }
        return xml.replacingCharacters(in: meta, with: "<Meta>" + customData)
    }

    deinit {
        keepassxc.kill9()
        _ = keepassxc.wait(timeout: 5)
        bus.stop()
        xServer.stop()
    }
}

/// The entries of a KeePass XML export, read with Foundation's XML parser.
private final class KeePassXMLEntries: NSObject, XMLParserDelegate {
    private(set) var entries: [PrivateKeePassXC.Entry] = []
    private var groups: [String] = []
    private var path: [String] = []
    private var text = ""
    private var key = ""
    // Per entry (and per history entry inside it).
    private var title = ""
    private var password = ""
    private var history: [String] = []

    init(_ data: Data) throws {
        super.init()
        let parser = XMLParser(data: data)
        parser.delegate = self
        guard parser.parse() else {
            throw HarnessError("cannot read the exported database: \(parser.parserError.map { "\($0)" } ?? "unknown error")")
        }
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        path.append(elementName)
        text = ""
        if elementName == "Entry" && !path.dropLast().contains("History") && !path.dropLast().contains("Entry") {
            title = ""
            password = ""
            history = []
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        let inHistory = path.contains("History")
        switch elementName {
        case "Name" where path.dropLast().last == "Group":
            groups.append(text)
        case "Key":
            key = text
        case "Value" where path.dropLast().last == "String":
            if key == "Title" && !inHistory { title = text }
            if key == "Password" { if inHistory { history.append(text) } else { password = text } }
        case "Entry" where !inHistory:
            entries.append(PrivateKeePassXC.Entry(groups: groups, title: title, password: password, history: history))
        case "Group":
            groups.removeLast()
        default:
            break
        }
        path.removeLast()
        text = ""
    }
}

/// KWallet's kwalletd5 as the Secret Service, started as pam_kwallet5 starts it at
/// login, on a private session bus, for one test.
///
/// The wallet is created at a first login and opened with the login key; kwalletd5
/// 5.103 offers a wallet to the Secret Service only when it finds it at start-up, so
/// this starts it once to create the wallet and again as the next login does.
public final class PrivateKWallet: Sendable {
    /// The private HOME and XDG directories.
    public let home: PrivateHome
    private let bus: SessionBus
    private let daemon: LockedPID

    /// The bus address, as `DBUS_SESSION_BUS_ADDRESS` holds it.
    public var address: String { bus.address }

    /// Starts kwalletd5 as a login does, twice (see above), and waits until it owns the Secret Service's name.
    public init(timeout: TimeInterval = 30) throws {
        home = try PrivateHome()
        bus = try SessionBus(home: home.home, timeout: timeout)
        daemon = LockedPID()
        let first = try Self.pamStart(bus: bus, timeout: timeout)
        let wallet = home.home.data + "/kwalletd/kdewallet.kwl"
        // Created and open, not merely begun: a wallet file stopped while it is being
        // written (a busy machine makes that likely) never opens with the key again.
        guard
            waitUntil(timeout: timeout, { FileManager.default.fileExists(atPath: wallet) && (try? self.isWalletOpen()) == true })
        else {
            kill(first, SIGKILL)
            throw HarnessError("kwalletd5 created and opened no wallet within \(Int(timeout)) s")
        }
        kill(first, SIGTERM)
        try bus.waitForSecretService(owned: false, timeout: timeout)
        daemon.set(try Self.pamStart(bus: bus, timeout: timeout))
        guard waitUntil(timeout: timeout, { (try? self.defaultCollection()) != nil }) else {
            throw HarnessError("kwalletd5 offered no default collection within \(Int(timeout)) s")
        }
        // The login's key opens the wallet a moment after the service is up (seconds on a
        // busy machine); before that, unlocking the collection would need the user.
        guard waitUntil(timeout: timeout, { (try? self.isWalletOpen()) == true }) else {
            throw HarnessError("kwalletd5 did not open the wallet with the login's key within \(Int(timeout)) s")
        }
    }

    /// The environment of a process on this bus, plus `extra`.
    public func environment(extra: [String: String] = [:]) -> [String: String] { bus.environment(extra: extra) }

    /// Whether the default collection says it is locked.
    public func isDefaultCollectionLocked() throws -> Bool {
        guard let path = try defaultCollection() else { throw HarnessError("KWallet has no default collection") }
        let reply = try send(path, "org.freedesktop.DBus.Properties.Get", ["string:org.freedesktop.Secret.Collection", "string:Locked"])
        return reply.contains("boolean true")
    }

    /// Closes the wallet as KWalletManager's "Close" does; opening it again needs its password.
    public func closeWallet() throws {
        let result = try runCommand(
            try Tools.find("dbus-send"),
            [
                "--session", "--print-reply", "--dest=org.kde.kwalletd5", "/modules/kwalletd5", "org.kde.KWallet.close",
                "string:kdewallet", "boolean:true"
            ], environment: environment(), timeout: 10)
        guard result.status == 0, try !isWalletOpen() else {
            throw HarnessError("kwalletd5 did not close the wallet: \(result.standardError)")
        }
    }

    /// Whether kwalletd5 has the wallet open.
    public func isWalletOpen() throws -> Bool {
        let result = try runCommand(
            try Tools.find("dbus-send"),
            ["--session", "--print-reply", "--dest=org.kde.kwalletd5", "/modules/kwalletd5", "org.kde.KWallet.isOpen", "string:kdewallet"],
            environment: environment(), timeout: 10)
        guard result.status == 0 else { throw HarnessError("kwalletd5 isOpen failed: \(result.standardError)") }
        return result.standardOutput.contains("boolean true")
    }

    /// The labels of the items of the mirror's schema, as `SearchItems` lists them (locked ones too).
    public func mirrorItems() throws -> [String] {
        let reply = try send(
            "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.SearchItems",
            ["dict:string:string:xdg:schema,org.openudid.VendorMirror"])
        return reply.split(separator: "\n").filter { $0.contains("object path") }.map(String.init)
    }

    private func defaultCollection() throws -> String? {
        let reply = try send("/org/freedesktop/secrets", "org.freedesktop.Secret.Service.ReadAlias", ["string:default"])
        guard let path = reply.components(separatedBy: "\"").dropFirst().first else { return nil }
        return path == "/" ? nil : path
    }

    private func send(_ path: String, _ method: String, _ arguments: [String]) throws -> String {
        let result = try runCommand(
            try Tools.find("dbus-send"), ["--session", "--print-reply", "--dest=org.freedesktop.secrets", path, method] + arguments,
            environment: environment(), timeout: 10)
        guard result.status == 0 else { throw HarnessError("dbus-send \(method) failed: \(result.standardError)") }
        return result.standardOutput
    }

    /// What pam_kwallet5 does at login: a 56-byte key on a pipe, then the
    /// environment on a unix socket. A fixed test key, derived from nothing.
    private static let pamStartScript = """
        import os, socket, subprocess, sys
        key = bytes(range(56))
        sock_path = os.path.join(os.environ['XDG_RUNTIME_DIR'], 'kwallet-env.sock')
        if os.path.exists(sock_path): os.unlink(sock_path)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); srv.bind(sock_path); srv.listen(1)
        r, w = os.pipe()
        env = dict(os.environ, PAM_KWALLET5_LOGIN=sock_path)
        p = subprocess.Popen(['kwalletd5', '--pam-login', str(r), str(srv.fileno())], env=env,
                             pass_fds=(r, srv.fileno()), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(r); os.write(w, key); os.close(w)
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.connect(sock_path)
        names = ('DBUS_SESSION_BUS_ADDRESS', 'XDG_RUNTIME_DIR', 'HOME', 'QT_QPA_PLATFORM')
        c.sendall(''.join(f'{k}={os.environ[k]}\\n' for k in names if k in os.environ).encode()); c.close(); srv.close()
        print(p.pid)
        """

    private static func pamStart(bus: SessionBus, timeout: TimeInterval) throws -> pid_t {
        _ = try Tools.find("kwalletd5")
        let result = try runCommand(
            try Tools.find("python3"), ["-c", pamStartScript],
            environment: bus.environment(extra: ["QT_QPA_PLATFORM": "offscreen"]), timeout: timeout)
        guard result.status == 0, let pid = pid_t(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw HarnessError("cannot start kwalletd5 as pam_kwallet5 does: \(result.standardError)")
        }
        try bus.waitForSecretService(owned: true, timeout: timeout)
        return pid
    }

    deinit {
        if let pid = daemon.value { kill(pid, SIGKILL) }
        bus.stop()
    }
}

/// A process id set once after init, read from any thread.
private final class LockedPID: @unchecked Sendable {
    // Every access holds `lock`.
    private let lock = NSLock()
    private var pid: pid_t?
    func set(_ value: pid_t) { lock.withLock { pid = value } }
    var value: pid_t? { lock.withLock { pid } }
}
