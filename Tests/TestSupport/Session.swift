import Foundation

/// A private desktop session for multi-process tests: a private HOME with XDG
/// directories, an X display, and a namespace of its own so sessions sharing
/// one Xvfb never see each other's slots.
public final class TestSession: @unchecked Sendable {
    // Immutable after init.
    public let home: PrivateHome
    public let display: String?
    public let namespace: String
    public let extraEnvironment: [String: String]
    /// The command `openudid`'s arguments follow: the built tool, or a
    /// launcher and its arguments, such as `flatpak run ID`.
    public let program: [String]

    /// Creates a session on `display` (nil: no X at all), whose `openudid` runs as `program` (nil: the built tool).
    public init(
        display: String?, namespace: String = "t" + String(UUID().uuidString.prefix(8)), home: PrivateHome? = nil,
        extraEnvironment: [String: String] = [:], program: [String]? = nil
    ) throws {
        self.home = try home ?? PrivateHome()
        self.display = display
        self.namespace = namespace
        self.extraEnvironment = extraEnvironment
        self.program = program ?? [Tools.product("openudid").path]
    }

    /// The environment of the session's processes.
    public var environment: [String: String] { home.environment(display: display, extra: extraEnvironment) }

    /// The arguments every `openudid` call of this session gets.
    public var commonArguments: [String] { ["--namespace", namespace] }

    /// Runs `openudid` to completion.
    @discardableResult
    public func run(_ arguments: [String], timeout: TimeInterval = 30) throws -> CommandResult {
        try runCommand(
            URL(fileURLWithPath: program[0]), program.dropFirst() + arguments + commonArguments, environment: environment, timeout: timeout)
    }

    /// `openudid get --app app`, returning the identifier (throws on failure).
    public func get(_ app: String, _ extra: [String] = []) throws -> String {
        let result = try run(["get", "--app", app] + extra)
        guard result.status == 0 else { throw HarnessError("openudid get --app \(app) failed (\(result.status)): \(result.standardError)") }
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `openudid get --app app --json`, parsed.
    ///
    /// `status` is the exit status expected: 5 where the display cannot be reached.
    public func report(_ app: String, _ extra: [String] = [], status: Int32 = 0) throws -> [String: Any] {
        let result = try run(["get", "--app", app, "--json"] + extra)
        guard result.status == status,
            let object = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        else {
            throw HarnessError("openudid get --json --app \(app) failed (\(result.status)): \(result.standardError)")
        }
        return object
    }

    /// Starts `openudid serve --app app` and waits for its first identifier line.
    public func serve(_ app: String, _ extra: [String] = [], waitForFirstLine: Bool = true) throws -> Participant {
        let child = try ChildProcess(
            program[0], program.dropFirst() + ["serve", "--app", app] + extra + commonArguments, environment: environment)
        let participant = Participant(app: app, child: child)
        if waitForFirstLine {
            guard participant.nextIdentifier(timeout: 15) != nil else {
                throw HarnessError("openudid serve --app \(app) printed no identifier: \(child.standardError)")
            }
        }
        return participant
    }
}

/// A running `openudid serve` process and the identifiers it printed.
public final class Participant: @unchecked Sendable {
    // `identifiers` is guarded by `lock`.
    private let lock = NSLock()
    private var identifiers: [String] = []
    public let app: String
    public let child: ChildProcess

    init(app: String, child: ChildProcess) {
        self.app = app
        self.child = child
    }

    /// Waits for the next identifier line.
    @discardableResult
    public func nextIdentifier(timeout: TimeInterval = 10) -> String? {
        guard let line = child.nextLine(timeout: timeout) else { return nil }
        lock.withLock { identifiers.append(line) }
        return line
    }

    /// The identifier most recently printed, reading any lines that arrived.
    public var current: String? {
        while let line = child.nextLine(timeout: 0) {
            lock.withLock { identifiers.append(line) }
        }
        return lock.withLock { identifiers.last }
    }

    /// Stops the process with SIGTERM and waits for it.
    public func stop() {
        child.signal(SIGTERM)
        child.wait(timeout: 10)
    }
}
