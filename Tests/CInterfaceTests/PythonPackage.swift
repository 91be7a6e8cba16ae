import Foundation
import TestSupport

/// bindings/python built the standard way, once per test process: a copy of
/// the directory (so the build leaves nothing in the source tree), a fresh
/// virtual environment with `build` from PyPI, `python -m build` making the
/// sdist and the wheel (setuptools comes from PyPI into build's own isolated
/// environment), and the wheel installed into the virtual environment.
final class PythonPackage: Sendable {
    /// The package every Python test shares.
    static let shared = Result { try PythonPackage() }

    /// The copy of bindings/python that was built.
    let source: URL
    /// Where `python -m build` put the sdist and the wheel.
    let dist: URL
    /// The virtual environment the wheel is installed in.
    let environment: URL
    /// Its interpreter.
    var python: URL { environment.appendingPathComponent("bin/python") }

    private init() throws {
        let root = try Installation.shared.get().binaries.deletingLastPathComponent().appendingPathComponent("python")
        try? FileManager.default.removeItem(at: root)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        source = root.appendingPathComponent("source")
        dist = root.appendingPathComponent("dist")
        environment = root.appendingPathComponent("venv")
        try Self.copySource(to: source)
        try Self.makeEnvironment(at: environment, with: ["build"])
        try Self.run(python, ["-m", "build", "--outdir", dist.path, source.path], timeout: 300)
        try Self.run(python, ["-m", "pip", "install", "--quiet", "--no-index", try wheel().path])
    }

    /// The sdist `python -m build` made.
    func sdist() throws -> URL { try built(suffix: ".tar.gz") }

    /// The wheel `python -m build` made.
    func wheel() throws -> URL { try built(suffix: "-py3-none-any.whl") }

    private func built(suffix: String) throws -> URL {
        let names = try FileManager.default.contentsOfDirectory(atPath: dist.path)
        guard let name = names.first(where: { $0.hasSuffix(suffix) }) else {
            throw HarnessError("python -m build made no *\(suffix) in \(dist.path): \(names)")
        }
        return dist.appendingPathComponent(name)
    }

    /// Copies bindings/python to `target`, without the caches an earlier run left.
    static func copySource(to target: URL) throws {
        let original = Installation.packageRoot.appendingPathComponent("bindings/python")
        try FileManager.default.copyItem(at: original, to: target)
        let caches =
            FileManager.default.enumerator(atPath: target.path)?.compactMap { $0 as? String }
            .filter { $0.hasSuffix("__pycache__") || $0.hasSuffix(".egg-info") || $0 == "build" || $0 == "dist" } ?? []
        for cache in caches { try? FileManager.default.removeItem(at: target.appendingPathComponent(cache)) }
    }

    /// A fresh virtual environment at `url` with `packages` from PyPI.
    static func makeEnvironment(at url: URL, with packages: [String] = []) throws {
        try run(try Tools.find("python3"), ["-m", "venv", url.path])
        if !packages.isEmpty {
            try run(url.appendingPathComponent("bin/python"), ["-m", "pip", "install", "--quiet"] + packages, timeout: 300)
        }
    }

    /// Runs a packaging command; its failure is the harness's, with what it printed.
    @discardableResult
    static func run(_ executable: URL, _ arguments: [String], timeout: TimeInterval = 120) throws -> CommandResult {
        var environment = ProcessInfo.processInfo.environment
        environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        environment["PYTHONPATH"] = nil
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        let result = try runCommand(executable, arguments, environment: environment, timeout: timeout)
        guard result.status == 0 else {
            throw HarnessError(
                "\(executable.lastPathComponent) \(arguments.joined(separator: " ")) failed (\(result.status)): "
                    + result.standardError + result.standardOutput)
        }
        return result
    }
}
