import DesktopSandbox
import Foundation
import Synchronization

/// The columns that run the `openudid` tool: a running app is an `openudid serve`
/// process, and what the app sees is the last identifier that process printed.
final class ToolMechanism: Mechanism {
    let kind: MechanismKind
    /// Keeps this column's selections and files apart from the other columns'.
    let namespace: String
    private let tool: String
    private let options: [String]
    private let serves = Mutex<[LabApp: ChildProcess]>([:])
    /// When the user last reset the identifier, until the running apps have all printed since.
    private let resetAt = Mutex<Date?>(nil)

    /// How long the serve processes must stay quiet before a step counts as settled.
    /// A participant answers a neighbour's change within its 20 ms debounce and one
    /// resolution; the margin is for a machine busy with other work.
    static let quiet: TimeInterval = 0.2

    /// - Parameters:
    ///   - kind: The column: `.selection`, `.selectionAndFile` or `.vendorMirror`.
    ///   - tool: The path of the `openudid` executable.
    ///   - mirror: The `--mirror` choice of the vendor-mirror column.
    ///   - namespace: Keeps this column's selections and files apart from the others'.
    init(_ kind: MechanismKind, tool: String, mirror: String, namespace: String) {
        self.kind = kind
        self.tool = tool
        self.namespace = namespace
        let columnOptions: [String] =
            switch kind {
            case .selection: ["--no-files", "--mirror", "none"]
            case .selectionAndFile: ["--mirror", "none"]
            case .vendorMirror: ["--mirror", mirror]
            default: preconditionFailure("\(kind) does not run the tool")
            }
        options = columnOptions + ["--namespace", namespace]
    }

    /// The options that select this column, as they would be typed.
    var commandLine: String { options.joined(separator: " ") }

    func start(_ app: LabApp, at site: Site) throws(LabError) {
        let child = try ChildProcess(tool, ["serve", "--app", app.id] + options, environment: site.environment)
        guard let line = child.nextLine(timeout: 15) else {
            child.waitForEndOfOutput(timeout: 0.5)
            let why = child.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
            child.kill9()
            throw LabError(
                "openudid serve --app \(app.id) \(commandLine) printed no identifier within 15 s\(why.isEmpty ? "" : ": \(why)")")
        }
        try Self.check(line, app: app)
        serves.withLock { $0[app] = child }
    }

    func stop(_ app: LabApp) throws(LabError) {
        guard let child = serves.withLock({ $0.removeValue(forKey: app) }) else { return }
        child.stop()
    }

    func remove(_ app: LabApp, at site: Site) throws(LabError) {
        try stop(app)
        try run(["remove-app", app.id], at: site, options: ["--namespace", namespace])
    }

    func setOptedOut(_ optedOut: Bool, app: LabApp, at site: Site) throws(LabError) {
        try run(["opt-out", "--app", app.id] + (optedOut ? [] : ["--undo"]), at: site)
    }

    /// `openudid reset` in this column's namespace; the running apps hear it.
    func resetByUser(at site: Site) throws(LabError) {
        resetAt.withLock { $0 = Date() }
        try run(["reset"], at: site, options: ["--namespace", namespace])
    }

    func settle() {
        // After a reset every running app prints its new identifier; on a busy machine
        // that can take longer than the quiet below, so wait for each to speak first.
        if let reset = resetAt.withLock({ $0.take() }) {
            _ = waitUntil(timeout: 15) { serves.withLock { $0.values.allSatisfy { $0.latest.at > reset } } }
        }
        let began = Date()
        while Date().timeIntervalSince(began) < 5 {
            let lastWord = serves.withLock { $0.values.map(\.latest.at).max() } ?? .distantPast
            if Date().timeIntervalSince(max(began, lastWord)) >= Self.quiet { return }
            usleep(10_000)
        }
    }

    func observe(_ app: LabApp, at site: Site) throws(LabError) -> String {
        guard let child = serves.withLock({ $0[app] }) else {
            throw LabError("\(app.name) is not running in the \(kind.title) column, so it cannot look")
        }
        guard child.isRunning else {
            throw LabError("openudid serve --app \(app.id) \(commandLine) exited (status \(child.exitStatus)): \(child.standardError)")
        }
        guard let line = child.latest.line else { throw LabError("openudid serve --app \(app.id) printed nothing") }
        try Self.check(line, app: app)
        return line
    }

    func shutDown() {
        let children = serves.withLock { serves in
            defer { serves.removeAll() }
            return Array(serves.values)
        }
        for child in children { child.stop() }
    }

    private func run(_ arguments: [String], at site: Site, options: [String]? = nil) throws(LabError) {
        let options = options ?? self.options
        let result = try runCommand(tool, arguments + options, environment: site.environment)
        guard result.status == 0 else {
            throw LabError(
                "openudid \((arguments + options).joined(separator: " ")) failed (status \(result.status)): \(result.standardError)")
        }
    }

    private static func check(_ line: String, app: LabApp) throws(LabError) {
        guard line.utf8.count == 40, line.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw LabError("openudid serve --app \(app.id) printed \"\(line)\", not an identifier of 40 hex digits")
        }
    }
}
