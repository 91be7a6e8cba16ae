import Dispatch
import Foundation
import Synchronization

/// What a population run found, as counts of users, so that parts run on different threads add up exactly.
///
/// The curves are kept as changes: `stableChanges[scheme][day]` is how many users
/// came onto their day-0 identifier (+) or left it (−) that day; their running sum
/// is the number of users whose first app is installed and has seen nothing else.
struct PopulationResult: Sendable, Equatable {
    let parameters: PopulationParameters
    var stableChanges: [[Int]]
    /// Likewise for the first app being installed at all: the ceiling of every curve.
    var installedChanges: [Int]
    /// Users whose first app had no identifier at all on day 0 (the push token offline), per scheme.
    var noValue: [Int]
    /// `linked[scheme][checkpoint]`: users in whom two apps of different vendors saw one identifier that day.
    var linked: [[Int]]

    init(_ parameters: PopulationParameters) {
        self.parameters = parameters
        let schemes = MechanismKind.allCases.count
        stableChanges = Array(repeating: Array(repeating: 0, count: parameters.days + 2), count: schemes)
        installedChanges = Array(repeating: 0, count: parameters.days + 2)
        noValue = Array(repeating: 0, count: schemes)
        linked = Array(repeating: Array(repeating: 0, count: parameters.checkpoints.count), count: schemes)
    }

    /// For each day from 0 to the last, the share of users whose first app is installed and
    /// has seen only its day-0 identifier up to then.
    func stability(_ scheme: MechanismKind) -> [Double] {
        shares(stableChanges[MechanismKind.allCases.firstIndex(of: scheme)!])
    }

    /// The share of users whose first app still sees its day-0 identifier on `day`.
    func stability(_ scheme: MechanismKind, atDay day: Int) -> Double { stability(scheme)[min(day, parameters.days)] }

    /// Of the users whose first app is installed on `day`, the share still on their day-0 identifier.
    func stabilityOfInstalled(_ scheme: MechanismKind, atDay day: Int) -> Double {
        let base = installed[min(day, parameters.days)]
        return base > 0 ? stability(scheme, atDay: day) / base : 0
    }

    /// For each day, the share of users whose first app is installed.
    var installed: [Double] { shares(installedChanges) }

    /// The share of users in whom two apps of different vendors saw the same identifier at checkpoint `index`.
    func linkability(_ scheme: MechanismKind, checkpoint index: Int) -> Double {
        Double(linked[MechanismKind.allCases.firstIndex(of: scheme)!][index]) / Double(parameters.users)
    }

    private func shares(_ changes: [Int]) -> [Double] {
        var running = 0
        return (0...parameters.days).map { day in
            running += changes[day]
            return Double(running) / Double(parameters.users)
        }
    }

    mutating func add(_ other: PopulationResult) {
        for scheme in stableChanges.indices {
            for day in stableChanges[scheme].indices { stableChanges[scheme][day] += other.stableChanges[scheme][day] }
            for index in linked[scheme].indices { linked[scheme][index] += other.linked[scheme][index] }
            noValue[scheme] += other.noValue[scheme]
        }
        for day in installedChanges.indices { installedChanges[day] += other.installedChanges[day] }
    }
}

/// The population: users simulated one at a time, event by event, each with a
/// random stream of its own drawn from the seed and its index, so that the result
/// depends on the seed alone and not on how the users are split across threads.
enum Population {
    /// Simulates every user and adds up what happened to them.
    static func run(_ parameters: PopulationParameters, transitions: TransitionTable) -> PopulationResult {
        let rules = Rules(transitions, parameters)
        let chunk = 2048
        let chunks = (parameters.users + chunk - 1) / chunk
        let parts = Mutex<[Int: PopulationResult]>([:])
        DispatchQueue.concurrentPerform(iterations: chunks) { index in
            let desk = Desk(parameters, rules)
            var result = PopulationResult(parameters)
            for user in (index * chunk)..<min(parameters.users, (index + 1) * chunk) {
                desk.live(user: user, into: &result)
            }
            parts.withLock { $0[index] = result }
        }
        var total = PopulationResult(parameters)
        for part in parts.withLock({ $0 }).sorted(by: { $0.key < $1.key }) { total.add(part.value) }
        return total
    }
}

/// The transitions laid out flat for the simulation, with the schemes each event can change.
struct Rules: Sendable {
    let schemes = MechanismKind.allCases.count
    /// `pairs[(environment * situations + situation) * schemes + scheme]`.
    let pairs: [TransitionTable.Pair]
    /// For each environment and situation, the schemes whose effect is not `keep` for some app.
    let active: [[Int]]
    /// For each environment, the schemes whose value a lost keyring takes from an app installed later.
    let wipedByKeyringLoss: [[Int]]

    init(_ table: TransitionTable, _ parameters: PopulationParameters) {
        precondition(Situation.allCases.enumerated().allSatisfy { $0.offset == $0.element.index })
        var pairs: [TransitionTable.Pair] = []
        var active: [[Int]] = []
        var wiped: [[Int]] = []
        for environment in Environment.allCases {
            for situation in Situation.allCases {
                let row = MechanismKind.allCases.map { table.pair(environment, situation, $0) }
                pairs += row
                active.append(row.indices.filter { situation.isInstall || row[$0].actor != .keep || row[$0].bystander != .keep })
            }
            wiped.append(
                MechanismKind.allCases.indices.filter { index in
                    let scheme = MechanismKind.allCases[index]
                    return table.pair(environment, .keyringLostAlone, scheme).actor
                        != table.pair(environment, .reinstallAlone, scheme).actor
                })
        }
        self.pairs = pairs
        self.active = active
        wipedByKeyringLoss = wiped
    }

    /// For each environment and situation, whether it only gives apps new values of their own
    /// (or none), in schemes where every situation does: values that nothing reads back or shares.
    var onlyRenews: [Bool] {
        let situations = Situation.allCases.count
        func renews(_ effect: Effect) -> Bool { [.fresh, .keep, .unavailable].contains(effect) }
        return active.indices.map { row in
            let environment = row / situations
            return active[row].allSatisfy { scheme in
                (0..<situations).allSatisfy { situation in
                    let pair = pairs[(environment * situations + situation) * schemes + scheme]
                    return renews(pair.actor) && renews(pair.bystander)
                }
            }
        }
    }

}
