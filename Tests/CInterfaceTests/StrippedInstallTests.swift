import Foundation
import TestSupport
import Testing

/// `scripts/install` installs the library and the tool without their debug
/// information, or with `--keep-debug` with it in separate files that the
/// installed ones name.
@Suite struct StrippedInstallTests {
    /// The section names of the ELF file at `path`, as `readelf -S` lists them.
    private func sections(_ path: String) throws -> Set<String> {
        let result = try runCommand(Tools.find("readelf"), ["-S", "-W", path], environment: ["PATH": "/usr/bin:/bin", "LANG": "C"])
        guard result.status == 0 else { throw HarnessError("readelf -S \(path) failed: \(result.standardError)") }
        return Set(
            result.standardOutput.split(separator: "\n").compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix(".") }.map(String.init)
            })
    }

    @Test func theInstalledLibraryAndToolCarryNoDebugInformation() throws {
        let prefix = try Installation.shared.get().prefix
        for path in ["lib/libopenudid.so.1", "bin/openudid"] {
            let names = try sections(prefix.appendingPathComponent(path).path)
            #expect(names.contains(".text"), "\(path): \(names)")
            #expect(names.filter { $0.hasPrefix(".debug_") }.isEmpty, "\(path) keeps \(names.filter { $0.hasPrefix(".debug_") })")
        }
        // What was built had it: stripping is what took it away.
        #expect(try sections(Tools.productsDirectory.appendingPathComponent("liblibopenudid.so").path).contains(".debug_info"))
        // The stripped library still works.
        let tool = try runCommand(prefix.appendingPathComponent("bin/openudid"), ["--version"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(tool.standardOutput == "openudid 0.5.0\n")
    }

    @Test func keepDebugPutsTheDebugInformationInFilesTheInstalledOnesName() throws {
        let home = try PrivateHome()
        let prefix = home.root.appendingPathComponent("prefix")
        let result = try Installation.install(["--prefix", prefix.path, "--keep-debug"])
        #expect(result.status == 0, "\(result.standardError)")
        for (path, debug) in [
            ("lib/libopenudid.so.1", "lib/.debug/libopenudid.so.1.debug"), ("bin/openudid", "bin/.debug/openudid.debug")
        ] {
            let installed = try sections(prefix.appendingPathComponent(path).path)
            #expect(!installed.contains(".debug_info"), "\(path)")
            #expect(installed.contains(".gnu_debuglink"), "\(path) names no debug file")
            #expect(try sections(prefix.appendingPathComponent(debug).path).contains(".debug_info"), "\(debug)")
        }
    }
}
