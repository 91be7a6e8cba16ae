import DesktopSandbox
import Foundation

extension Bench {
    // MARK: 7b. Footprint of a C host

    /// The small C program of the C host figures. Built twice from this one
    /// source: with WITH_OPENUDID it opens a handle, reads the value and
    /// participates (with the file mirror, like the Swift host); without, it
    /// does the rest alike. Both settle, then print `rss <KiB>` from
    /// /proc/self/status. Only then does the linked one check, in its report,
    /// that it serves a selection slot: the JSON costs memory of its own.
    static let cHostSource = #"""
        #include <stdio.h>
        #include <string.h>
        #include <unistd.h>
        #ifdef WITH_OPENUDID
        #include <openudid.h>
        #endif

        static long status_field(const char *name) {
            FILE *file = fopen("/proc/self/status", "r");
            char line[256];
            long value = -1;
            size_t length = strlen(name);
            while (file != NULL && fgets(line, sizeof line, file) != NULL) {
                if (strncmp(line, name, length) == 0 && line[length] == ':') {
                    sscanf(line + length + 1, "%ld", &value);
                    break;
                }
            }
            if (file != NULL) fclose(file);
            return value;
        }

        int main(int argc, char **argv) {
        #ifdef WITH_OPENUDID
            openudid_options *options;
            openudid *udid;
            char id[OPENUDID_VALUE_SIZE];
            char *report;
            int served;
            if (argc < 3) return 2;
            openudid_options_new(&options);
            openudid_options_set_namespace(options, argv[2]);
            openudid_options_set_mirror(options, OPENUDID_MIRROR_FILE);
            if (openudid_open_with(argv[1], NULL, options, &udid) != OPENUDID_OK || openudid_value(udid, id) != OPENUDID_OK
                || openudid_participate(udid, NULL, NULL) != OPENUDID_OK) {
                fprintf(stderr, "c host: %s\n", openudid_last_error());
                return 1;
            }
            openudid_options_free(options);
        #else
            (void)argc;
            (void)argv;
        #endif
            /* Let the library's threads settle before measuring, as the Swift host does. */
            usleep(300000);
            printf("rss %ld\n", status_field("VmRSS"));
        #ifdef WITH_OPENUDID
            report = openudid_report_json(udid);
            served = report != NULL && strstr(report, "\"slot\" : null") == NULL;
            openudid_free(report);
            if (!served) {
                fprintf(stderr, "c host: participating, but serving no selection slot\n");
                return 1;
            }
        #endif
            return 0;
        }
        """#

    /// What linking libopenudid and participating add to a small C program:
    /// the same program with and without the library, in pairs.
    func cHostFootprint() throws {
        log("footprint: what libopenudid and participating add to a small C program")
        let plainName = "a small C program that does nothing else, RSS"
        let withName = "the same C program linked with libopenudid, after openudid_participate, RSS"
        let gainName = "RSS libopenudid and participating add to the C program (paired runs)"
        func skip(_ reason: String) {
            results.add(.skipped("footprint.c-host.rss", plainName, unit: .bytes, because: reason))
            results.add(.skipped("footprint.c-host.participating.rss", withName, unit: .bytes, because: reason))
            results.add(.skipped("footprint.c-host.gain", gainName, unit: .bytes, because: reason))
        }
        guard let cc = Tools.find("cc") else { return skip("needs a C compiler (cc; scripts/bootstrap installs gcc)") }
        let library = tools.productsDirectory + "/liblibopenudid.so"
        guard FileManager.default.fileExists(atPath: library) else {
            return skip("needs libopenudid beside openudid-bench: swift build -c release --product libopenudid")
        }
        // The header of this checkout: the benchmark runs where it was built.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let include = root.appendingPathComponent("include").path
        checkOrderFile(root.appendingPathComponent("Sources/libopenudid/link/order.txt").path, library: library)
        guard FileManager.default.fileExists(atPath: include + "/openudid.h") else {
            return skip("cannot find include/openudid.h at \(include)")
        }

        // Laid out as scripts/install lays it out, so the program links by SONAME.
        let directory = scratch.path + "/c-host"
        let lib = directory + "/lib"
        try FileManager.default.createDirectory(atPath: lib, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: lib + "/libopenudid.so.1", withDestinationPath: library)
        try FileManager.default.createSymbolicLink(atPath: lib + "/libopenudid.so", withDestinationPath: "libopenudid.so.1")
        try Self.cHostSource.write(toFile: directory + "/host.c", atomically: true, encoding: .utf8)
        let plain = directory + "/plain"
        let linked = directory + "/linked"
        for (output, flags) in [
            (plain, [String]()), (linked, ["-DWITH_OPENUDID", "-I", include, "-L", lib, "-lopenudid", "-Wl,-rpath," + lib])
        ] {
            let compiler = try Child(
                cc, ["-O2", "-o", output, directory + "/host.c"] + flags, environment: environment, scratch: scratch.path)
            compiler.wait()
            guard compiler.succeeded else { throw BenchError("cc could not build the C host: \(compiler.standardError)") }
        }

        // Alternating, each participating run in an empty namespace of its own, so drift hits both.
        var without: [Double] = []
        var with: [Double] = []
        var gain: [Double] = []
        for pair in 0..<plan.hostPairs {
            let bare = try cHost(plain, [])
            let participating = try cHost(linked, ["com.bench.chost", "chost\(pair)"])
            without.append(bare)
            with.append(participating)
            gain.append(participating - bare)
        }
        results.add(Figure("footprint.c-host.rss", plainName, unit: .bytes, samples: without))
        results.add(Figure("footprint.c-host.participating.rss", withName, unit: .bytes, samples: with, baseline: "footprint.c-host.rss"))
        results.add(Figure("footprint.c-host.gain", gainName, unit: .bytes, samples: gain, target: .atMost(8 * 1_048_576)))
    }

    /// Says when the library's order file has gone stale: the functions it
    /// lists are placed side by side at the front of the library's code, and
    /// those of its names the library no longer has are spread out again, which
    /// a C host pays for in pages (scripts/order-libopenudid writes the file).
    private func checkOrderFile(_ path: String, library: String) {
        guard let nm = Tools.find("nm"), let listed = try? String(contentsOfFile: path, encoding: .utf8),
            let symbols = try? runCommand(nm, ["--defined-only", library], environment: environment, timeout: 60),
            symbols.status == 0
        else { return }
        let defined = Set(symbols.standardOutput.split(separator: "\n").compactMap { $0.split(separator: " ").last })
        let names = listed.split(separator: "\n")
        let gone = names.filter { !defined.contains($0) }.count
        if gone * 20 > names.count {
            log("\(gone) of the \(names.count) functions \(path) lists are gone from the library; run scripts/order-libopenudid")
        }
    }

    /// Runs one C host and returns the RSS it reported, in bytes.
    private func cHost(_ program: String, _ arguments: [String]) throws -> Double {
        let child = try Child(program, arguments, environment: environment, scratch: scratch.path)
        let line = child.nextLine(timeout: 30) ?? ""
        child.wait()
        let words = line.split(separator: " ")
        guard child.succeeded, words.count == 2, words[0] == "rss", let kilobytes = Double(words[1]) else {
            throw BenchError("the C host reported nothing usable (\(line)): \(child.standardError)")
        }
        return kilobytes * 1024
    }
}
