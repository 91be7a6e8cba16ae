import Foundation

/// Values an app can see: none yet, zeros, no value at all; identifiers are numbered from `firstIdentifier` on.
private let noneYet: UInt32 = 0
private let zeros: UInt32 = 1
private let noValue: UInt32 = 2
private let firstIdentifier: UInt32 = 3

/// One user's desktop, reused for every user a thread simulates: flat buffers of
/// a few hundred bytes, cleared between users, so that a user costs no allocation.
///
/// Every app has a value per scheme (what it saw the last time it looked, kept
/// after it is removed); every vendor and the desktop as a whole remember what an
/// app of theirs last saw. An event changes the values as the lab's transitions
/// say, and after it every installed app has looked.
final class Desk {
    private let parameters: PopulationParameters
    private let schemes: Int, apps: Int, vendors: Int, appsPerVendor: Int
    private let checkpoints: [Int]
    /// The rate of each event, per day; and, while a user lives, its rate now.
    private let perDay: UnsafeMutablePointer<Double>, rates: UnsafeMutablePointer<Double>
    /// `actorEffect[(environment * situations + situation) * schemes + scheme]`, and the same for onlookers.
    private let actorEffect: UnsafeMutablePointer<Effect>, bystanderEffect: UnsafeMutablePointer<Effect>
    /// The schemes an event can change, `activeStart[row] ..< activeStart[row + 1]` in `active`.
    private let active: UnsafeMutablePointer<Int>, activeStart: UnsafeMutablePointer<Int>
    /// Per environment and situation: whether its only effects are new values of their own, in
    /// schemes in which every effect is (`dormant`).
    private let onlyRenews: UnsafeMutablePointer<Bool>
    /// Whether a lost keyring takes a scheme's value, per environment and scheme.
    private let wipedByKeyringLoss: UnsafeMutablePointer<Bool>
    /// `seen[scheme * apps + app]`, `vendorMemory[scheme * vendors + vendor]`, `anyMemory[scheme]`, `dayZero[scheme]`.
    private let seen: UnsafeMutablePointer<UInt32>, vendorMemory: UnsafeMutablePointer<UInt32>
    private let anyMemory: UnsafeMutablePointer<UInt32>, dayZero: UnsafeMutablePointer<UInt32>
    /// Per scheme: opted out (every app reads zeros), broken (the first app saw another value), counted as stable.
    private let optedOut: UnsafeMutablePointer<Bool>, broken: UnsafeMutablePointer<Bool>, stable: UnsafeMutablePointer<Bool>
    private var installed: UInt32 = 0, everInstalled: UInt32 = 0, seenApps: UInt32 = 0, seenVendors: UInt32 = 0
    private var environment = 0, tracked = 0, nextIdentifier = firstIdentifier
    private var tracking = false, trackedInstalled = false, unsettled = false
    private var now = 0.0
    private var random = SplitMix64(seed: 0)

    init(_ parameters: PopulationParameters, _ rules: Rules) {
        self.parameters = parameters
        schemes = rules.schemes
        apps = parameters.groupSize
        vendors = parameters.vendors
        appsPerVendor = parameters.appsPerVendor
        checkpoints = parameters.checkpoints
        func buffer<T>(_ values: [T]) -> UnsafeMutablePointer<T> {
            let pointer = UnsafeMutablePointer<T>.allocate(capacity: max(values.count, 1))
            pointer.initialize(from: values, count: values.count)
            return pointer
        }
        perDay = buffer(Event.allCases.map { parameters[rate: $0.rate] / 365 })
        rates = buffer(Array(repeating: 0.0, count: Event.count))
        actorEffect = buffer(rules.pairs.map(\.actor))
        bystanderEffect = buffer(rules.pairs.map(\.bystander))
        active = buffer(rules.active.flatMap { $0 })
        activeStart = buffer(rules.active.reduce(into: [0]) { $0.append($0.last! + $1.count) })
        wipedByKeyringLoss = buffer(
            rules.wipedByKeyringLoss.flatMap { wiped in (0..<rules.schemes).map { wiped.contains($0) } })
        onlyRenews = buffer(rules.onlyRenews)
        seen = buffer(Array(repeating: noneYet, count: schemes * apps))
        vendorMemory = buffer(Array(repeating: noneYet, count: schemes * vendors))
        anyMemory = buffer(Array(repeating: noneYet, count: schemes))
        dayZero = buffer(Array(repeating: noneYet, count: schemes))
        optedOut = buffer(Array(repeating: false, count: schemes))
        broken = buffer(Array(repeating: false, count: schemes))
        stable = buffer(Array(repeating: false, count: schemes))
    }

    deinit {
        for pointer in [seen, vendorMemory, anyMemory, dayZero] { pointer.deallocate() }
        for pointer in [optedOut, broken, stable, wipedByKeyringLoss, onlyRenews] { pointer.deallocate() }
        for pointer in [perDay, rates] { pointer.deallocate() }
        for pointer in [active, activeStart] { pointer.deallocate() }
        for pointer in [actorEffect, bystanderEffect] { pointer.deallocate() }
    }

    private func vendor(_ app: Int) -> Int { app / appsPerVendor }
    private func vendorApps(_ vendor: Int) -> UInt32 { ((1 << UInt32(appsPerVendor)) - 1) << UInt32(vendor * appsPerVendor) }
    private func bit(_ app: Int) -> UInt32 { 1 << UInt32(app) }
    private var everyApp: UInt32 { apps == 32 ? ~0 : (1 << UInt32(apps)) - 1 }

    /// Lives one user's days and adds what happened to `result`.
    func live(user: Int, into result: inout PopulationResult) {
        random = SplitMix64.forUser(user, seed: parameters.seed)
        environment = random.uniform() < parameters[rate: "sandboxed"] ? 1 : 0
        // Day 0: the user's apps, drawn without repeats; the first is the one whose identifier is followed.
        tracked = random.below(apps)
        installed = bit(tracked)
        while installed.nonzeroBitCount < parameters.apps {
            installed |= bit(randomApp(in: everyApp & ~installed))
        }
        everInstalled = installed
        tracking = false
        now = 0
        newMachine(first: tracked)
        for scheme in 0..<schemes {
            dayZero[scheme] = seen[scheme * apps + tracked]
            broken[scheme] = dayZero[scheme] < firstIdentifier
            stable[scheme] = false
            if broken[scheme] { result.noValue[scheme] += 1 }
        }
        trackedInstalled = false
        tracking = true
        settle(into: &result)

        var next = 0
        var total = 0.0
        var stale = true
        while true {
            // The rates change only with the apps installed and with what the first app has lost.
            if stale {
                total = 0
                for index in 0..<Event.count {
                    rates[index] = rate(of: Event(rawValue: index)!)
                    total += rates[index]
                }
                stale = false
            }
            now += total > 0 ? -log(1 - random.uniform()) / total : Double.infinity
            while next < checkpoints.count, Double(checkpoints[next]) <= now {
                record(checkpoint: next, into: &result)
                next += 1
            }
            guard now < Double(parameters.days) else { break }
            var pick = random.uniform() * total
            var event = Event.newMachine
            for index in 0..<Event.count where rates[index] > 0 {
                event = Event(rawValue: index)!
                if pick < rates[index] { break }
                pick -= rates[index]
            }
            happen(event)
            if unsettled {
                settle(into: &result)
                stale = true
            }
        }
    }

    private func rate(of event: Event) -> Double {
        let base = perDay[event.rawValue]
        switch event {
        case .install: return everInstalled.nonzeroBitCount < apps ? base : 0
        case .remove: return base * Double(installed.nonzeroBitCount)
        case .reinstall: return base * Double((everInstalled & ~installed).nonzeroBitCount)
        case .restart: return installed == 0 || dormant(.restart) ? 0 : base
        case .relaunch: return installed == 0 || dormant(.relaunch) ? 0 : base
        case .reboot: return dormant(.reboot) ? 0 : base
        case .reset, .optOut, .keyringLost, .newMachine: return base
        }
    }

    /// Whether `situation` can no longer change anything the run counts for this user: it
    /// only gives apps new values of their own, in schemes whose values only ever are new
    /// (so never shared, and never read back), and the first app has lost those already.
    /// Its events are then left out, which the exponential clocks of the others allow.
    private func dormant(_ situation: Situation) -> Bool {
        let row = environment * Situation.count + situation.index
        guard onlyRenews[row] else { return false }
        for index in activeStart[row]..<activeStart[row + 1] where !broken[active[index]] { return false }
        return true
    }

    private func happen(_ event: Event) {
        switch event {
        case .install: install(randomApp(in: everyApp & ~everInstalled))
        case .remove: installed &= ~bit(randomApp(in: installed))
        case .reinstall: install(randomApp(in: everInstalled & ~installed))
        case .restart: inPlace(.restart)
        case .relaunch: inPlace(.relaunch)
        case .reboot: inPlace(.reboot)
        case .reset: inPlace(.reset)
        case .optOut: inPlace(.optOut)
        case .keyringLost:
            for scheme in 0..<schemes where wipedByKeyringLoss[environment * schemes + scheme] { forget(scheme) }
            inPlace(.keyringLost)
        case .newMachine: newMachine(first: nil)
        }
        switch event {
        case .install, .remove, .reinstall, .newMachine: unsettled = true
        default: break
        }
    }

    private func randomApp(in set: UInt32) -> Int {
        var remaining = random.below(set.nonzeroBitCount)
        var bits = set
        while remaining > 0 {
            bits &= bits - 1
            remaining -= 1
        }
        return bits.trailingZeroBitCount
    }

    /// A fresh computer and home: nothing of the old one is kept; the user installs the same apps again.
    private func newMachine(first: Int?) {
        seen.update(repeating: noneYet, count: schemes * apps)
        vendorMemory.update(repeating: noneYet, count: schemes * vendors)
        anyMemory.update(repeating: noneYet, count: schemes)
        optedOut.update(repeating: false, count: schemes)
        let reinstalled = installed
        installed = 0
        seenApps = 0
        seenVendors = 0
        if let first { install(first) }
        var bits = reinstalled & ~(first.map(bit) ?? 0)
        while bits != 0 {
            install(bits.trailingZeroBitCount)
            bits &= bits - 1
        }
    }

    /// The situation in which `app` is installed now.
    private func situation(installing app: Int) -> Situation {
        let others = installed & ~bit(app)
        let known = seenApps & bit(app) != 0
        if others == 0 {
            if seenApps == 0 { return .firstRun }
            if known { return .reinstallAlone }
            return seenVendors & bit(vendor(app)) != 0 ? .installAloneSameVendor : .installAloneNewVendor
        }
        let sameVendor = others & vendorApps(vendor(app)) != 0
        if known { return sameVendor ? .reinstallBesideSameVendor : .reinstallBesideOtherVendor }
        return sameVendor ? .installBesideSameVendor : .installBesideOtherVendor
    }

    private func install(_ app: Int) {
        let row = (environment * Situation.count + situation(installing: app).index) * schemes
        installed |= bit(app)
        everInstalled |= bit(app)
        seenApps |= bit(app)
        seenVendors |= bit(vendor(app))
        for scheme in 0..<schemes {
            if optedOut[scheme] {
                show(zeros, scheme, app)
                continue
            }
            switch actorEffect[row + scheme] {
            case .zero: optOut(scheme)
            case .unavailable: show(noValue, scheme, app)
            case let effect: look(scheme, app, source(effect, scheme, app))
            }
            guard bystanderEffect[row + scheme].isFresh || bystanderEffect[row + scheme].isFreshShared else { continue }
            var bits = installed & ~bit(app)
            while bits != 0 {
                look(scheme, bits.trailingZeroBitCount, newIdentifier())
                bits &= bits - 1
            }
        }
    }

    /// The identifier an app that looks for the first time since its install gets from `effect`.
    private func source(_ effect: Effect, _ scheme: Int, _ app: Int) -> UInt32 {
        var value = noneYet
        switch effect {
        case .vendorPeer: value = firstInstalled(scheme, except: app, among: vendorApps(vendor(app)))
        case .peer: value = firstInstalled(scheme, except: app, among: ~0)
        case .vendorMemory: value = vendorMemory[scheme * vendors + vendor(app)]
        case .own, .keep: value = seen[scheme * apps + app]
        case .anyMemory: value = anyMemory[scheme]
        case .fresh, .freshShared, .zero, .unavailable: break
        }
        return value >= firstIdentifier ? value : newIdentifier()
    }

    private func firstInstalled(_ scheme: Int, except app: Int, among set: UInt32) -> UInt32 {
        let candidates = installed & set & ~bit(app)
        return candidates == 0 ? noneYet : seen[scheme * apps + candidates.trailingZeroBitCount]
    }

    /// An event that happens where the apps are: one installed app (drawn) is the one it happens to, the others look on.
    private func inPlace(_ situation: Situation) {
        let actor = installed == 0 ? -1 : randomApp(in: installed)
        let row = environment * Situation.count + situation.index
        for index in activeStart[row]..<activeStart[row + 1] {
            let scheme = active[index]
            guard !optedOut[scheme] else { continue }
            let actorGets = actorEffect[row * schemes + scheme]
            let othersGet = bystanderEffect[row * schemes + scheme]
            if actorGets.isZero || othersGet.isZero {
                optOut(scheme)
                continue
            }
            var shared = noneYet
            var bits = installed
            while bits != 0 {
                let app = bits.trailingZeroBitCount
                bits &= bits - 1
                switch app == actor ? actorGets : othersGet {
                case .fresh: look(scheme, app, newIdentifier())
                case .freshShared:
                    if shared == noneYet { shared = newIdentifier() }
                    look(scheme, app, shared)
                case .unavailable: show(noValue, scheme, app)
                default: break
                }
            }
            // A value the system holds changes whether or not an app looks: every copy of it is the new one.
            if actorGets.isFreshShared || othersGet.isFreshShared {
                if shared == noneYet { shared = newIdentifier() }
                spread(shared, scheme)
            }
        }
    }

    private func newIdentifier() -> UInt32 {
        nextIdentifier &+= 1
        if nextIdentifier < firstIdentifier { nextIdentifier = firstIdentifier }
        return nextIdentifier
    }

    /// `app` sees `value`, and its vendor and the desktop remember it.
    private func look(_ scheme: Int, _ app: Int, _ value: UInt32) {
        vendorMemory[scheme * vendors + vendor(app)] = value
        anyMemory[scheme] = value
        show(value, scheme, app)
    }

    private func show(_ value: UInt32, _ scheme: Int, _ app: Int) {
        seen[scheme * apps + app] = value
        if tracking, app == tracked, !broken[scheme], value != dayZero[scheme] {
            broken[scheme] = true
            unsettled = true
        }
    }

    private func spread(_ value: UInt32, _ scheme: Int) {
        (vendorMemory + scheme * vendors).update(repeating: value, count: vendors)
        anyMemory[scheme] = value
        var bits = ~installed & everyApp
        while bits != 0 {
            let app = bits.trailingZeroBitCount
            if seen[scheme * apps + app] != noneYet { seen[scheme * apps + app] = value }
            bits &= bits - 1
        }
    }

    private func optOut(_ scheme: Int) {
        optedOut[scheme] = true
        var bits = installed
        while bits != 0 {
            show(zeros, scheme, bits.trailingZeroBitCount)
            bits &= bits - 1
        }
    }

    /// A lost keyring: what only the keyring held is gone; the apps still installed write theirs back when they start.
    private func forget(_ scheme: Int) {
        (vendorMemory + scheme * vendors).update(repeating: noneYet, count: vendors)
        anyMemory[scheme] = noneYet
        for app in 0..<apps where installed & bit(app) == 0 { seen[scheme * apps + app] = noneYet }
        var bits = installed
        while bits != 0 {
            let app = bits.trailingZeroBitCount
            let value = seen[scheme * apps + app]
            if value >= firstIdentifier {
                vendorMemory[scheme * vendors + vendor(app)] = value
                anyMemory[scheme] = value
            }
            bits &= bits - 1
        }
    }

    /// Counts the user in or out of each curve from now on, where that changed.
    private func settle(into result: inout PopulationResult) {
        unsettled = false
        // A state that holds from time t counts from the first whole day at or after t.
        let day = min(Int(now.rounded(.up)), parameters.days + 1)
        let installedNow = installed & bit(tracked) != 0
        if installedNow != trackedInstalled {
            trackedInstalled = installedNow
            result.installedChanges[day] += installedNow ? 1 : -1
        }
        for scheme in 0..<schemes {
            let stableNow = installedNow && !broken[scheme]
            if stableNow != stable[scheme] {
                stable[scheme] = stableNow
                result.stableChanges[scheme][day] += stableNow ? 1 : -1
            }
        }
    }

    /// Counts the user as linkable in each scheme where two apps of different vendors see one identifier now.
    private func record(checkpoint index: Int, into result: inout PopulationResult) {
        for scheme in 0..<schemes {
            var bits = installed
            search: while bits != 0 {
                let app = bits.trailingZeroBitCount
                bits &= bits - 1
                let value = seen[scheme * apps + app]
                guard value >= firstIdentifier else { continue }
                var others = bits
                while others != 0 {
                    let other = others.trailingZeroBitCount
                    others &= others - 1
                    if vendor(other) != vendor(app), seen[scheme * apps + other] == value {
                        result.linked[scheme][index] += 1
                        break search
                    }
                }
            }
        }
    }
}

// The simulation's hot path calls these at every event: they live in this file so that
// a build without whole-module optimisation can inline them.

/// SplitMix64: small, fast, and good enough to draw event times (Steele, Lea and Flood, 2014).
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in [0, 1).
    mutating func uniform() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// A whole number in 0..<bound.
    mutating func below(_ bound: Int) -> Int { Int(uniform() * Double(bound)) }

    /// The stream of user `user` of a run seeded with `seed`.
    static func forUser(_ user: Int, seed: UInt64) -> SplitMix64 {
        var mixer = SplitMix64(seed: seed)
        let base = mixer.next()
        var userMixer = SplitMix64(seed: base ^ (UInt64(user) &* 0xD1B5_4A32_D192_ED03))
        return SplitMix64(seed: userMixer.next())
    }
}

extension Situation {
    /// How many there are (`allCases` makes an array at every call).
    static let count = allCases.count

    /// Its position among all situations, without a search: the simulation asks at every event.
    var index: Int {
        switch self {
        case .firstRun: 0
        case .installBesideSameVendor: 1
        case .installBesideOtherVendor: 2
        case .restart: 3
        case .relaunch: 4
        case .reboot: 5
        case .reinstallBesideSameVendor: 6
        case .reinstallBesideOtherVendor: 7
        case .reset: 8
        case .keyringLost: 9
        case .reinstallAlone: 10
        case .installAloneNewVendor: 11
        case .installAloneSameVendor: 12
        case .keyringLostAlone: 13
        case .optOut: 14
        }
    }
}

/// The events the population draws, each with the rate that sets how often.
enum Event: Int, CaseIterable {
    case install, remove, reinstall, restart, relaunch, reboot, reset, optOut, keyringLost, newMachine

    static let count = allCases.count

    var rate: String {
        switch self {
        case .install: "install"
        case .remove: "remove"
        case .reinstall: "reinstall"
        case .restart: "restart"
        case .relaunch: "relaunch"
        case .reboot: "reboot"
        case .reset: "reset"
        case .optOut: "opt-out"
        case .keyringLost: "keyring-lost"
        case .newMachine: "new-machine"
        }
    }

}

extension Effect {
    fileprivate var isZero: Bool {
        if case .zero = self { true } else { false }
    }
    fileprivate var isFresh: Bool {
        if case .fresh = self { true } else { false }
    }
    fileprivate var isFreshShared: Bool {
        if case .freshShared = self { true } else { false }
    }
}
