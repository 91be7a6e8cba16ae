import Foundation
import TestSupport
import Testing

/// What `scripts/install` lays out, and the ABI hygiene of the library it installs.
@Suite struct InstallTests {
    private var installation: Installation { get throws { try Installation.shared.get() } }

    private func tool(_ name: String, _ arguments: [String]) throws -> String {
        let result = try runCommand(Tools.find(name), arguments, environment: ["PATH": "/usr/bin:/bin", "LANG": "C"])
        guard result.status == 0 else { throw HarnessError("\(name) \(arguments) failed: \(result.standardError)") }
        return result.standardOutput
    }

    @Test func installsTheLibraryItsLinksTheHeaderThePkgConfigFileAndTheTool() throws {
        let prefix = try installation.prefix
        let files = FileManager.default
        #expect(files.isExecutableFile(atPath: prefix.appendingPathComponent("lib/libopenudid.so.1").path))
        #expect(try files.destinationOfSymbolicLink(atPath: prefix.appendingPathComponent("lib/libopenudid.so").path) == "libopenudid.so.1")
        #expect(
            files.contentsEqual(
                atPath: prefix.appendingPathComponent("include/openudid.h").path,
                andPath: Installation.packageRoot.appendingPathComponent("include/openudid.h").path))
        #expect(files.isExecutableFile(atPath: prefix.appendingPathComponent("bin/openudid").path))

        #expect(try installation.pkgConfig(["--modversion"]) == ["0.5.0"])
        #expect(try installation.pkgConfig(["--cflags"]) == ["-I\(prefix.path)/include"])
        #expect(try installation.pkgConfig(["--libs"]) == ["-L\(prefix.path)/lib", "-lopenudid"])

        // The installed tool works.
        let help = try runCommand(prefix.appendingPathComponent("bin/openudid"), ["--help"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(help.status == 0 && help.standardOutput.contains("usage: openudid"))
    }

    @Test func destdirPrefixesWhatIsWrittenButNotWhatOpenudidPcRecords() throws {
        let home = try PrivateHome()
        let stage = home.root.appendingPathComponent("stage")
        let result = try Installation.install(["--prefix", "/opt/openudid"], extra: ["DESTDIR": stage.path])
        #expect(result.status == 0, "\(result.standardError)")
        let pc = try String(contentsOf: stage.appendingPathComponent("opt/openudid/lib/pkgconfig/openudid.pc"), encoding: .utf8)
        #expect(pc.contains("prefix=/opt/openudid\n"))
        #expect(!pc.contains(stage.path))
        for path in ["lib/libopenudid.so.1", "include/openudid.h", "bin/openudid"] {
            #expect(FileManager.default.fileExists(atPath: stage.appendingPathComponent("opt/openudid/" + path).path), "\(path)")
        }
    }

    @Test func aWrongArgumentIsAUsageError() throws {
        let result = try Installation.install(["--bogus"])
        #expect(result.status == 2)
        #expect(result.standardError.contains("unknown argument --bogus"))
    }

    @Test func theLibraryExportsTheHeadersFunctionsAndNothingElse() throws {
        let library = try installation.prefix.appendingPathComponent("lib/libopenudid.so.1").path
        let exported = try tool("nm", ["-D", "--defined-only", "--extern-only", library])
            .split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
        #expect(!exported.isEmpty)
        #expect(exported.filter { !$0.hasPrefix("openudid_") } == [])
        // Every function of the header is there, and nothing the header does not declare.
        #expect(Installation.declaredFunctions.count >= 11)
        #expect(Set(exported) == Set(Installation.declaredFunctions))
    }

    @Test func theLibraryIsNamedLibopenudidSo1AndNeedsNoSwiftToolchain() throws {
        let library = try installation.prefix.appendingPathComponent("lib/libopenudid.so.1").path
        let dynamic = try tool("readelf", ["-d", library])
        #expect(dynamic.contains("Library soname: [libopenudid.so.1]"))
        let needed = dynamic.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(!needed.isEmpty)
        for line in needed {
            #expect(
                !line.contains("swift") && !line.contains("Foundation") && !line.contains("dispatch") && !line.contains("BlocksRuntime"),
                "\(line)")
            // The C++ runtime is inside too (Sources/libopenudid/link): a C host loads no libstdc++.so.6 for it.
            #expect(!line.contains("libstdc++"), "\(line)")
        }
        // The loader resolves every dependency from the system alone.
        let resolved = try tool("ldd", [library])
        #expect(!resolved.contains("not found"), "\(resolved)")
        #expect(!resolved.contains("/swift"), "\(resolved)")
    }

    @Test(arguments: [
        ("cc", Installation.strictC, "c"), ("c++", Installation.strictCxx, "c++"),
        ("cc", ["-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror"], "c"),
        ("c++", ["-std=c++17", "-Wall", "-Wextra", "-pedantic", "-Werror"], "c++")
    ])
    func theHeaderCompilesWithoutWarnings(compiler: String, flags: [String], language: String) throws {
        let home = try PrivateHome()
        let source = home.root.appendingPathComponent("include-only.txt")
        try """
        #include <openudid.h>
        #if !OPENUDID_CHECK_VERSION(OPENUDID_VERSION_MAJOR, OPENUDID_VERSION_MINOR, OPENUDID_VERSION_PATCH)
        #error OPENUDID_CHECK_VERSION denies the version of the header
        #endif
        static void ignore(void *ctx) { (void)ctx; }
        int main(void) {
            openudid_destroy_notify destroy = ignore;
            int64_t generation = 0;
            destroy(&generation);
            return OPENUDID_OK + OPENUDID_VALUE_SIZE - 41 + (OPENUDID_VERSION[0] == '\\0') + OPENUDID_FORGET_DRY_RUN - 1;
        }

        """
        .write(to: source, atomically: true, encoding: .utf8)
        let cflags = try installation.pkgConfig(["--cflags"])
        let result = try runCommand(
            Tools.find(compiler), flags + cflags + ["-x", language, "-fsyntax-only", source.path],
            environment: try installation.environment())
        #expect(result.status == 0, "\(compiler) \(flags): \(result.standardError)")
        #expect(result.standardError.isEmpty, "\(result.standardError)")
    }
}
