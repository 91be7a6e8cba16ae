import Foundation

/// Tk, through Python's tkinter: an independent implementation of X selections
/// (its own owner and requestor code) to check interoperability against.
public enum Tk {
    /// A Python that can import tkinter.
    ///
    /// The system Python comes first: a Python built by pyenv or similar often
    /// lacks the `_tkinter` module even when Tk is installed.
    /// - Throws: `HarnessError` telling to run scripts/bootstrap when none can.
    public static func python() throws -> URL { try found.get() }

    private static let found: Result<URL, HarnessError> = {
        var candidates = [URL(fileURLWithPath: "/usr/bin/python3")]
        if let onPath = try? Tools.find("python3") { candidates.append(onPath) }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
            let probe = try? runCommand(candidate, ["-c", "import tkinter"], environment: environment(display: ""), timeout: 20)
            if probe?.status == 0 { return .success(candidate) }
        }
        return .failure(
            HarnessError(
                "no python3 with tkinter found (tried \(candidates.map(\.path).joined(separator: ", "))); run scripts/bootstrap, which installs python3-tk"
            ))
    }()

    /// The environment for a Tk script on `display`.
    public static func environment(display: String) -> [String: String] {
        ["DISPLAY": display, "PYTHONIOENCODING": "utf-8", "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
    }

    /// Runs a tkinter `script` on `display` with `arguments` (as `sys.argv[1...]`) and returns its output lines.
    ///
    /// - Throws: `HarnessError` when Python is missing or the script fails.
    public static func run(_ script: String, display: String, arguments: [String] = []) throws -> [String] {
        let result = try runCommand(python(), ["-c", script] + arguments, environment: environment(display: display))
        guard result.status == 0 else {
            throw HarnessError("the Tk script failed with status \(result.status): \(result.standardError)")
        }
        var lines = result.standardOutput.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// Starts a long-running tkinter `script` on `display` and waits for it to print "ready".
    public static func start(_ script: String, display: String, arguments: [String] = [], timeout: TimeInterval = 20) throws -> ChildProcess
    {
        let child = try ChildProcess(python(), ["-c", script] + arguments, environment: environment(display: display))
        guard let line = child.nextLine(timeout: timeout), line.hasPrefix("ready") else {
            throw HarnessError("the Tk script did not become ready: \(child.standardError)")
        }
        return child
    }
}
