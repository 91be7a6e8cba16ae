import Foundation
import OpenUDIDKit
import XSelection

extension Bench {
    /// Names `prefix0` ... `prefix<count-1>`.
    func names(_ prefix: String, _ count: Int) -> [SelectionName] {
        (0..<count).map { SelectionName("\(prefix)\($0)") }
    }

    /// Reads `names` and checks outside the timing that each gave what `expect` says.
    func timedRead(
        _ reader: SelectionReader, _ names: [SelectionName], depth: Int?, warmup: Int, reps: Int,
        expectValues: Bool
    ) throws -> [Double] {
        let options = SelectionReader.Options(deadline: .seconds(30), maxBytes: SlotRecord.maximumSize, pipelineDepth: depth)
        return try measure(
            warmup: warmup, reps: reps, { try reader.read(names, target: "UTF8_STRING", options: options) },
            check: { outcomes in
                let good = outcomes.values.filter { expectValues ? $0.value != nil : $0 == .noOwner }.count
                guard outcomes.count == names.count, good == names.count else {
                    let bad = outcomes.first { expectValues ? $0.value.value == nil : $0.value != .noOwner }
                    throw BenchError(
                        "reading \(names.count) selections gave \(good) as expected; for example \(bad.map { "\($0.key): \($0.value)" } ?? "none")"
                    )
                }
            })
    }

    // MARK: 1. The floor

    func floor() throws {
        log("the floor: round trips and conversions the server answers itself")
        let reader = try SelectionReader(display: display)
        defer { reader.close() }
        let plan = self.plan.floor
        results.add(
            Figure(
                "floor.roundtrip", "one X round trip (SelectionReader.roundTrip, GetInputFocus)",
                samples: try measure(warmup: plan.warmup, reps: plan.reps) { try reader.roundTrip() }))
        results.add(
            Figure(
                "floor.roundtrip.xlib", "one X round trip, plain Xlib XSync",
                samples: try helperTiming("roundtrip", prefix: "_BENCH_NOBODY_", count: 1, warmup: plan.warmup, reps: plan.reps),
                baseline: "floor.roundtrip"))
        let unowned = names("_BENCH_NOBODY_", 100)
        results.add(
            Figure(
                "floor.unowned100", "100 pipelined conversions of unowned selections (SelectionReader)",
                samples: try timedRead(reader, unowned, depth: nil, warmup: plan.warmup, reps: plan.reps / 2, expectValues: false),
                baseline: "floor.unowned100.xlib", target: .atMostTimesBaseline(1.5)))
        results.add(
            Figure(
                "floor.unowned100.xlib", "100 pipelined conversions of unowned selections, plain Xlib",
                samples: try helperTiming("unowned", prefix: "_BENCH_NOBODY_", count: 100, warmup: plan.warmup, reps: plan.reps / 2),
                baseline: "floor.roundtrip"))
        results.add(
            Figure(
                "floor.unowned100.xlib.defended",
                "the same plain Xlib pass making the requests the reader's defences need (timestamp, owner queries, deletes, own times)",
                samples: try helperTiming(
                    "unowned-defended", prefix: "_BENCH_NOBODY_", count: 100, warmup: plan.warmup, reps: plan.reps / 2),
                baseline: "floor.unowned100.xlib"))
    }

    // MARK: 2. Reading 100 occupied slots

    func readHundred() throws {
        log("reading 100 occupied slots: pipelined, sequential, plain Xlib, Tk")
        let template = Self.recordTemplate(id: .random())
        let prefix = "_BENCH_READ_"
        let owner = try startOwner(["--prefix", prefix, "--count", "100", "--target", "UTF8_STRING", "--text", template])
        defer { owner.stop() }
        let reader = try SelectionReader(display: display)
        defer { reader.close() }
        let slots = names(prefix, 100)

        // Every reader must see the records as served before anything is timed.
        let check = try reader.read(slots, target: "UTF8_STRING", options: .init(deadline: .seconds(5)))
        for (index, name) in slots.enumerated() {
            let expected = template.replacingOccurrences(of: "{i}", with: String(index))
            guard let value = check[name]?.value, String(decoding: value.bytes, as: UTF8.self) == expected else {
                throw BenchError("\(name) did not hold its record: \(String(describing: check[name]))")
            }
        }

        try pipelinedAndSequential(
            reader, slots, suffix: "", pipelined: "100 occupied slots, one owner process, pipelined (SelectionReader)",
            sequential: "the same, one conversion awaited at a time (pipelineDepth 1)",
            baseline: ("read100.pipelined.xlib", .atMostTimesBaseline(1.2)))
        results.add(
            Figure(
                "read100.pipelined.xlib", "the same slots, pipelined plain Xlib/xcb reader",
                samples: try helperTiming(
                    "pipelined", prefix: prefix, count: 100, warmup: plan.pipelined.warmup,
                    reps: plan.pipelined.reps),
                baseline: "floor.unowned100.xlib"))
        results.add(
            Figure(
                "read100.pipelined.xlib.defended",
                "the same plain reader making the requests the reader's defences need, and taking the property events they bring",
                samples: try helperTiming(
                    "pipelined-defended", prefix: prefix, count: 100, warmup: plan.pipelined.warmup,
                    reps: plan.pipelined.reps),
                baseline: "read100.pipelined.xlib"))
        results.add(
            Figure(
                "read100.sequential.xlib", "the same slots, sequential plain Xlib reader (convert, wait, get property)",
                samples: try helperTiming(
                    "sequential", prefix: prefix, count: 100, warmup: plan.sequential.warmup,
                    reps: plan.sequential.reps),
                baseline: "read100.pipelined"))
        results.add(try tkReading(prefix: prefix, count: 100))

        // Many owners: one process per slot, as a hundred participating apps would be.
        let manyPrefix = "_BENCH_MANY_"
        let many = try startOwners(
            (0..<plan.ownerProcesses).map { index in
                ["--prefix", manyPrefix, "--count", "1", "--start", "\(index)", "--target", "UTF8_STRING", "--text", template]
            })
        defer { many.forEach { $0.stop(grace: 0.5) } }
        let manySlots = names(manyPrefix, plan.ownerProcesses)
        try pipelinedAndSequential(
            reader, manySlots, suffix: ".100procs", pipelined: "100 occupied slots, one owner process each, pipelined",
            sequential: "the same, one conversion awaited at a time",
            baseline: ("floor.unowned100", .atMostTimesBaseline(5)))
    }

    /// Times `slots` read in one pipelined pass, and one conversion at a time,
    /// as the figures `read100.pipelined<suffix>` and `read100.sequential<suffix>`.
    ///
    /// - Parameter baseline: The pipelined figure's baseline and its target.
    private func pipelinedAndSequential(
        _ reader: SelectionReader, _ slots: [SelectionName], suffix: String, pipelined: String, sequential: String,
        baseline: (id: String, target: Target)
    ) throws {
        results.add(
            Figure(
                "read100.pipelined\(suffix)", pipelined,
                samples: try timedRead(
                    reader, slots, depth: nil, warmup: plan.pipelined.warmup, reps: plan.pipelined.reps, expectValues: true),
                baseline: baseline.id, target: baseline.target))
        results.add(
            Figure(
                "read100.sequential\(suffix)", sequential,
                samples: try timedRead(
                    reader, slots, depth: 1, warmup: plan.sequential.warmup, reps: plan.sequential.reps, expectValues: true),
                baseline: "read100.pipelined\(suffix)", target: .atLeastTimesBaseline(15)))
    }

    /// Tk reading the slots one `selection get` at a time, timed inside the script.
    func tkReading(prefix: String, count: Int) throws -> Figure {
        let id = "read100.tk"
        let name = "the same slots, Tk `selection get` one by one (python3-tk)"
        let python = "/usr/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            return .skipped(id, name, because: "/usr/bin/python3 is missing (install python3-tk)")
        }
        let script = scratch.path + "/tk-reader.py"
        try TkReader.script.write(toFile: script, atomically: true, encoding: .utf8)
        let child = try Child(
            python, [script, prefix, "\(count)", "UTF8_STRING", "\(plan.tk.warmup)", "\(plan.tk.reps)"],
            environment: environment, scratch: scratch.path)
        let lines = child.allLines(timeout: 120)
        child.wait()
        if lines.first == "no-tkinter" {
            return .skipped(id, name, because: "python3 has no tkinter (install python3-tk)")
        }
        let samples = lines.compactMap { Double($0).map { $0 * 1e-9 } }
        guard child.succeeded, samples.count == plan.tk.reps else {
            throw BenchError("the Tk reader failed: \(lines.joined(separator: "; ")) \(child.standardError)")
        }
        return Figure(id, name, samples: samples, baseline: "read100.pipelined")
    }

    // MARK: 3. Scaling

    func scaling() throws {
        log("scaling: 10, 100 and 1000 slots")
        let template = Self.recordTemplate(id: .random())
        let prefix = "_BENCH_SCALE_"
        for (position, count) in [10, 100, 1000].enumerated() {
            // The server keeps every selection ever owned in a list it searches on
            // each request, so each count gets a server holding only its own.
            if position > 0 { try freshServer() }
            let owner = try startOwner(["--prefix", prefix, "--count", "\(count)", "--target", "UTF8_STRING", "--text", template])
            defer { owner.stop() }
            let reader = try SelectionReader(display: display)
            defer { reader.close() }
            let occupied = names(prefix, count)
            let unowned = names("_BENCH_NOBODY_", count)
            let fast = plan.scaling(count, pipelined: true)
            let slow = plan.scaling(count, pipelined: false)
            let series: [(String, String, [Double], String?)] = [
                (
                    "unowned", "\(count) unowned selections (the floor)",
                    try timedRead(reader, unowned, depth: nil, warmup: fast.warmup, reps: fast.reps, expectValues: false), "floor.roundtrip"
                ),
                (
                    "pipelined", "\(count) occupied slots, pipelined",
                    try timedRead(reader, occupied, depth: nil, warmup: fast.warmup, reps: fast.reps, expectValues: true),
                    "scale\(count).unowned"
                ),
                (
                    "sequential", "\(count) occupied slots, sequential",
                    try timedRead(reader, occupied, depth: 1, warmup: slow.warmup, reps: slow.reps, expectValues: true),
                    "scale\(count).pipelined"
                )
            ]
            for (label, name, samples, baseline) in series {
                let figure = Figure("scale\(count).\(label)", name, samples: samples, baseline: baseline)
                results.add(figure)
                results.scaling.append(ScalingPoint(slots: count, series: label, median: figure.median ?? 0, p95: figure.p95 ?? 0))
            }
        }
    }
}

/// The independent reader: Tk's own selection code, driven from Python.
enum TkReader {
    static let script = """
        import sys, time
        try:
            import tkinter
        except ImportError:
            print("no-tkinter", flush=True)
            sys.exit(0)
        prefix, count, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        warmup, reps = int(sys.argv[4]), int(sys.argv[5])
        names = [prefix + str(i) for i in range(count)]
        root = tkinter.Tk()
        root.withdraw()

        def one_pass():
            start = time.perf_counter_ns()
            for name in names:
                if not root.selection_get(selection=name, type=target):
                    print("error: " + name + " was empty", flush=True)
                    sys.exit(1)
            return time.perf_counter_ns() - start

        for _ in range(warmup):
            one_pass()
        print("\\n".join(str(one_pass()) for _ in range(reps)), flush=True)

        """
}
