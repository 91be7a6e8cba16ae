import CommandLineKit

/// One input of the population: its option, its default, what it means and where the default comes from.
struct Rate: Sendable {
    /// The option's name, such as `remove`.
    let key: String
    /// The default.
    let defaultValue: Double
    /// What the number counts, for help and the tables.
    let meaning: String
    /// Where the default comes from; "illustrative" where no published figure could be checked.
    let source: String

    /// The inputs that are rates or shares, in the order the tables list them.
    static let all: [Rate] = [
        Rate(
            key: "install", defaultValue: 1, meaning: "apps of the group a user installs afresh, per year",
            source: illustrative),
        Rate(
            key: "remove", defaultValue: 1, meaning: "removals per installed app per year (1: an app stays a year on average)",
            source: illustrative
                + " The uninstall rates app-analytics vendors publish are for phone apps in their first weeks, and do not carry over."),
        Rate(key: "reinstall", defaultValue: 0.5, meaning: "reinstalls per removed app per year", source: illustrative),
        Rate(
            key: "restart", defaultValue: 365, meaning: "times per year one app quits and starts again while the others run",
            source: illustrative),
        Rate(
            key: "relaunch", defaultValue: 180, meaning: "times per year every app of the group has quit before one starts again",
            source: illustrative),
        Rate(key: "reboot", defaultValue: 100, meaning: "reboots (or log-outs) per year", source: illustrative),
        Rate(
            key: "reset", defaultValue: 0.1,
            meaning: "times per year the user resets the identifiers they can (the advertising id's and OpenUDID's)",
            source: illustrative),
        Rate(
            key: "opt-out", defaultValue: 0.02, meaning: "opt-outs per user per year (never undone)", source: illustrative),
        Rate(key: "keyring-lost", defaultValue: 0.05, meaning: "lost keyrings per user per year", source: illustrative),
        Rate(
            key: "new-machine", defaultValue: 0.25, meaning: "new computers per user per year, each with a fresh home",
            source: illustrative),
        Rate(
            key: "sandboxed", defaultValue: 0.2,
            meaning: "share of users whose apps are all sandboxed without the X11 socket (Flatpak on Wayland with fallback-x11)",
            source: illustrative)
    ]

    static let illustrative = "illustrative: no published figure for Linux desktop apps could be checked."

    /// The rate named `key`.
    static func named(_ key: String) -> Rate? { all.first { $0.key == key } }
}

/// Everything a population run depends on: its size, the group of apps, the rates and the seed.
struct PopulationParameters: Sendable, Equatable {
    var users = 20_000
    var days = 365
    var seed: UInt64 = 1
    /// Vendors in the group, and apps each vendor ships: app `i` is vendor `i / appsPerVendor`'s.
    var vendors = 4
    var appsPerVendor = 2
    /// Apps of the group each user has on day 0.
    var apps = 3
    /// Each rate by its key; `sandboxed` is a share, the others are per year.
    var rates: [String: Double] = Dictionary(uniqueKeysWithValues: Rate.all.map { ($0.key, $0.defaultValue) })

    /// The number of apps in the group.
    var groupSize: Int { vendors * appsPerVendor }

    /// The value of rate `key`.
    subscript(rate key: String) -> Double { rates[key] ?? 0 }

    /// The days at which the tables report: 30, 90 and 365, those within the run, and the last day.
    var checkpoints: [Int] {
        var days = [30, 90, 365].filter { $0 < self.days }
        days.append(self.days)
        return days
    }

    /// The options that set the parameters, shared by `openudid-lab population` and the lab.
    static let options: [Option] =
        [
            .value("users", "N", help: "users to simulate", default: "20000", check: .integer(in: 1...100_000_000)),
            .value("days", "D", help: "days to simulate", default: "365", check: .integer(in: 1...3650)),
            .value("seed", "N", help: "the seed: the same seed gives the same result", default: "1", check: .integer(in: 0...Int.max)),
            .value("vendors", "N", help: "vendors in the group", default: "4", check: .integer(in: 1...8)),
            .value("apps-per-vendor", "N", help: "apps each vendor ships", default: "2", check: .integer(in: 1...4)),
            .value("apps", "N", help: "apps of the group each user has on day 0", default: "3", check: .integer(in: 1...32))
        ]
        + Rate.all.map { rate in
            .value(
                rate.key, rate.key == "sandboxed" ? "SHARE" : "RATE", help: rate.meaning, default: number(rate.defaultValue),
                mayRepeat: true, check: .number(atLeast: 0))
        }

    /// The parameters a command line gives, or a usage error that names the option.
    init(_ arguments: ParsedCommand) {
        users = arguments.integer("users")!
        days = arguments.integer("days")!
        seed = UInt64(arguments.integer("seed")!)
        vendors = arguments.integer("vendors")!
        appsPerVendor = arguments.integer("apps-per-vendor")!
        apps = arguments.integer("apps")!
        for rate in Rate.all { rates[rate.key] = arguments.number(rate.key)! }
        if apps > groupSize {
            arguments.fail("--apps \(apps) is more than the group's \(groupSize) apps (--vendors × --apps-per-vendor)")
        }
        if self[rate: "sandboxed"] > 1 { arguments.fail("--sandboxed is a share, from 0 to 1") }
    }

    init() {}
}

/// `3` for 3.0, `0.25` for 0.25: how tables and help print a rate.
func number(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
}
