import CommandLineKit
import Foundation

/// One rate varied over several values, every other input unchanged, and the population at each.
struct Sweep: Sendable {
    let rate: Rate
    let values: [Double]
    let results: [PopulationResult]

    /// The values a sweep of `rate` takes when none are given: around its default, from none to eight times it.
    static func defaultValues(of rate: Rate) -> [Double] {
        if rate.key == "sandboxed" { return [0, 0.2, 0.4, 0.6, 0.8, 1] }
        return [0, 0.25, 0.5, 1, 2, 4, 8].map { $0 * rate.defaultValue }
    }

    /// Runs the population once per value of `rate`, with the same seed, so that only the rate differs.
    init(_ rate: Rate, values: [Double], base: PopulationParameters, transitions: TransitionTable) {
        self.rate = rate
        self.values = values
        results = values.map { value in
            var parameters = base
            parameters.rates[rate.key] = value
            return Population.run(parameters, transitions: transitions)
        }
    }
}

/// `openudid-lab population`: the command, and the files a run writes.
enum PopulationRun {
    /// The subcommand's definition.
    static let command = Command(
        "population",
        abstract: "how long each identifier lasts across many simulated users",
        discussion: """
            Simulates users over days, each a desktop with some of the group's apps, with
            the events the lab measures (install, restart, relaunch, remove, reinstall,
            reboot, the user's reset and opt-out, a lost keyring, a new machine) at the
            rates given. What each event does to each identifier comes from the lab's own
            run (--transitions, which scripts/lab writes). Prints, per scheme, the share of
            users whose app still sees its day-0 identifier and the share in whom apps of
            two vendors see the same one, at day 30, 90 and 365; with --out, writes
            population.md, population.svg (and population-sweep.svg) there.
            """,
        options: PopulationParameters.options + [
            .value(
                "transitions", "FILE", help: "the transitions the lab measured", default: "docs/lab/transitions.json",
                mayRepeat: true),
            .value(
                "sweep", "RATE[=V,...]",
                help: "also run once per value of one rate (default values: 0 to 8 times its default) and plot day-D stability",
                check: .custom { value in
                    let name = String(value.split(separator: "=", maxSplits: 1)[0])
                    guard Rate.named(name) != nil else {
                        return "--sweep must name a rate (\(Rate.all.map(\.key).joined(separator: ", "))), not '\(name)'"
                    }
                    return sweepValues(value) == nil ? "--sweep \(name)= takes numbers of at least 0, such as \(name)=0,1,2" : nil
                }),
            .value("out", "DIR", help: "write population.md, population.svg and population-sweep.svg into DIR", mayRepeat: true),
            .flag("json", help: "print the figures as JSON")
        ],
        epilogue: "Exit status: 0 success, 1 the transitions cannot be read or the files written, 2 bad usage.")

    /// The rate and its values that `--sweep` names; nil values when a value is not a number.
    static func sweepValues(_ text: String) -> (rate: Rate, values: [Double])? {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard let rate = Rate.named(parts[0]) else { return nil }
        guard parts.count == 2 else { return (rate, Sweep.defaultValues(of: rate)) }
        let values = parts[1].split(separator: ",").map { Double($0) }
        guard !values.isEmpty, values.allSatisfy({ ($0 ?? -1) >= 0 }) else { return nil }
        return (rate, values.map { $0! })
    }

    /// Runs the command: reads the transitions, simulates, prints and writes.
    static func main(_ arguments: ParsedCommand) -> Never {
        let parameters = PopulationParameters(arguments)
        let path = arguments["transitions"]!
        do {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw LabError("cannot read \(path); scripts/lab measures the transitions and writes it, or pass --transitions FILE")
            }
            let transitions = try TransitionTable.decode(data, from: path)
            let began = ContinuousClock.now
            let result = Population.run(parameters, transitions: transitions)
            let elapsed = ContinuousClock.now - began
            let sweep = arguments["sweep"].flatMap(sweepValues).map {
                Sweep($0.rate, values: $0.values, base: parameters, transitions: transitions)
            }
            if let directory = arguments["out"] {
                try write(result, sweep: sweep, transitions: transitions, to: directory, includeTransitions: false)
            }
            if arguments.has("json") {
                print(json(result, seconds: seconds(elapsed)))
            } else {
                print(table(result), terminator: "")
                print(String(format: "simulated in %.2f s", seconds(elapsed)))
            }
        } catch let error as LabError {
            say(error.description)
            exit(1)
        } catch {
            say("\(error)")
            exit(1)
        }
        exit(0)
    }

    /// Writes the page and the pictures (and, for the lab, the transitions) into `directory`.
    static func write(
        _ result: PopulationResult, sweep: Sweep?, transitions: TransitionTable, to directory: String, includeTransitions: Bool
    ) throws(LabError) {
        var files = [
            ("population.md", PopulationMarkdown.render(result, sweep: sweep, transitions: transitions)),
            ("population.svg", PopulationPlots.survival(result))
        ]
        if let sweep { files.append(("population-sweep.svg", PopulationPlots.sweep(sweep))) }
        if includeTransitions { files.append(("transitions.json", String(decoding: transitions.encoded(), as: UTF8.self))) }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (name, text) in files {
                try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + name), options: .atomic)
            }
        } catch {
            throw LabError("cannot write into \(directory): \(error.localizedDescription)")
        }
    }

    /// The figures as a plain table for the terminal.
    static func table(_ result: PopulationResult) -> String {
        let checkpoints = result.parameters.checkpoints
        var lines = [
            PopulationPlots.description(result.parameters),
            "scheme".padding(toLength: 24, withPad: " ", startingAt: 0) + checkpoints.map { pad("stable d\($0)") }.joined()
                + checkpoints.map { pad("linked d\($0)") }.joined()
        ]
        let drawn = PopulationPlots.drawn(result)
        for scheme in MechanismKind.allCases {
            let cells =
                drawn.contains(scheme)
                ? checkpoints.map { pad(PopulationMarkdown.percent(result.stability(scheme, atDay: $0))) }
                    + checkpoints.indices.map { pad(PopulationMarkdown.percent(result.linkability(scheme, checkpoint: $0))) }
                : Array(repeating: pad("—"), count: checkpoints.count * 2)
            lines.append(scheme.title.padding(toLength: 24, withPad: " ", startingAt: 0) + cells.joined())
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func pad(_ text: String) -> String {
        String(repeating: " ", count: max(0, 13 - text.count)) + text
    }

    /// The figures as JSON: the parameters, and per scheme the shares at each checkpoint.
    static func json(_ result: PopulationResult, seconds: Double) -> String {
        let parameters = result.parameters
        let checkpoints = parameters.checkpoints
        var schemes: [String: Any] = [:]
        for scheme in PopulationPlots.drawn(result) {
            schemes[scheme.rawValue] = [
                "stable": Dictionary(uniqueKeysWithValues: checkpoints.map { ("day\($0)", result.stability(scheme, atDay: $0)) }),
                "linkable": Dictionary(
                    uniqueKeysWithValues: checkpoints.indices.map { ("day\(checkpoints[$0])", result.linkability(scheme, checkpoint: $0)) })
            ]
        }
        let object: [String: Any] = [
            "users": parameters.users, "days": parameters.days, "seed": parameters.seed, "seconds": seconds,
            "rates": parameters.rates, "schemes": schemes, "peakMemoryBytes": peakMemoryBytes(),
            "cpuSeconds": cpuSeconds()
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The processor time this process has used, on every thread, in seconds.
    private static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The most memory this process has held (VmHWM), in bytes; 0 where /proc does not say.
    private static func peakMemoryBytes() -> Double {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
        let kibibytes = line?.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Double($0) }
        return (kibibytes ?? 0) * 1024
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (whole, attoseconds) = duration.components
        return Double(whole) + Double(attoseconds) * 1e-18
    }
}
