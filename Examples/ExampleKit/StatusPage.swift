import OpenUDIDKit
import XSelection
import XTextWindow

/// What an example app shows: its identity, the identifier, and the account
/// of where the identifier came from, as lines for a `TextWindow`.
struct StatusPage {
    typealias Line = TextWindow.Line
    typealias Colour = TextWindow.Colour

    static let background = Colour(hex: 0xFAFAF7)
    static let foreground = Colour(hex: 0x1F2328)
    static let dim = Colour(hex: 0x6E7781)
    static let alarm = Colour(hex: 0xCF222E)

    let app: ExampleApp
    let namespace: String?

    /// The page for `report`; `slot` is the selection slot the app serves now.
    func lines(for report: Report, slot: Int?) -> [Line] {
        let accent = Colour(hex: app.accent)
        var lines: [Line] = [
            Line(app.name, colour: .white, background: accent, weight: .large),
            Line(identityLine(report), colour: Self.dim),
            Line(),
            Line("Shared identifier", colour: accent, weight: .bold),
            Line(
                "  " + Self.grouped(report.identifier.hex), colour: report.identifier.isOptedOut ? Self.alarm : Self.foreground,
                weight: .large),
            Line("This app's own value (derived, not linkable to other apps)", colour: accent, weight: .bold),
            Line("  " + report.appScoped.uuidString.lowercased()),
            Line(),
            Line("Where it came from", colour: accent, weight: .bold)
        ]
        lines += provenance(report)
        lines += [
            Line(),
            Line("This app", colour: accent, weight: .bold),
            Line("  " + slotLine(slot, report: report)),
            Line("  " + mirrorLine(report)),
            Line("  " + sourcesLine(report), colour: Self.dim),
            Line(),
            Line(
                report.optOut == .app
                    ? "Keys: o or a click opts back in, q or Esc quits."
                    : "Keys: o or a click opts this app out, q or Esc quits.",
                colour: Self.dim)
        ]
        return lines
    }

    /// The text the window shows before the first resolution.
    func placeholder() -> [Line] {
        [
            Line(app.name, colour: .white, background: Colour(hex: app.accent), weight: .large),
            Line(app.id, colour: Self.dim), Line(), Line("resolving...")
        ]
    }

    private func identityLine(_ report: Report) -> String {
        var parts = [app.id, "vendor \(report.app.vendor)"]
        if let namespace { parts.append("namespace \(namespace)") }
        return parts.joined(separator: "  \u{B7}  ")
    }

    // MARK: Provenance

    private func provenance(_ report: Report) -> [Line] {
        switch report.optOut {
        case .app:
            return [
                Line("  Opted out: this app reports 40 zeros and does not vote.", colour: Self.alarm),
                Line("  Its slot says so; the other apps go on sharing without it.")
            ]
        case .user:
            return [Line("  The user opted out for every app: every app reports 40 zeros.", colour: Self.alarm)]
        case .noConsent:
            return [Line("  Waiting for the user's consent: nothing is read, kept or shared yet.", colour: Self.alarm)]
        case let reason?:
            return [Line("  Opted out (\(reason.rawValue)): this app reports 40 zeros.", colour: Self.alarm)]
        case nil:
            break
        }
        var lines: [Line] = []
        switch report.origin {
        case .consensus:
            lines.append(Line("  Consensus: " + voteSummary(report)))
        case .generated:
            lines.append(Line("  Generated here: no other app and no mirror had one."))
        case .keptLocal:
            lines.append(Line("  Kept this app's own value: " + voteSummary(report)))
        default:
            return [Line("  No vote was held.")]
        }
        if let replaced = report.replaced {
            lines.append(Line("  It gave up its own \(replaced.hex.prefix(8))... to join the others.", colour: Self.dim))
        }
        let shown = 6
        let ballots = report.agreeing.map { ($0, true) } + report.disagreeing.map { ($0, false) }
        for (ballot, agrees) in ballots.prefix(shown) {
            var row = "   \(agrees ? "+" : "x") " + Self.padded(place(ballot), to: 18) + " " + who(ballot, report: report)
            if !agrees { row += "  says \(ballot.identifier.hex.prefix(8))..." }
            lines.append(Line(row, colour: agrees ? Self.foreground : Self.alarm))
        }
        // Apps that opted out are there, and abstain: show them, so a reader sees why they do not count.
        let abstaining = report.ignored.filter { $0.reason == .optedOut }.map(\.ballot)
        for ballot in abstaining.prefix(max(0, shown - ballots.count)) {
            let row = "   - " + Self.padded(place(ballot), to: 18) + " " + who(ballot, report: report) + ", opted out"
            lines.append(Line(row, colour: Self.dim))
        }
        if ballots.count > shown {
            lines.append(Line("     ... and \(ballots.count - shown) more", colour: Self.dim))
        }
        return lines
    }

    /// "3 apps agreed, 1 disagreed", counting a vendor mirror apart from the apps.
    private func voteSummary(_ report: Report) -> String {
        let apps = report.agreeing.filter { $0.kind != .mirror }.count
        let mirrors = report.agreeing.filter { $0.kind == .mirror }.count
        var text = Self.count(apps, "app")
        if mirrors > 0 { text += " and " + Self.count(mirrors, "mirror") }
        text += " agreed, \(report.disagreeing.count) disagreed"
        return text
    }

    /// Where a ballot came from, shortly: `selection slot 3`, `secret-service mirror`.
    private func place(_ ballot: Report.Ballot) -> String {
        switch ballot.kind {
        case .selection: "selection " + (ballot.source.components(separatedBy: " (").first ?? ballot.source)
        case .fileSlot: "file slot"
        case .localCache: "local cache"
        case .mirror: ballot.source.components(separatedBy: " of ").first ?? "mirror"
        case .held: "value held in memory"
        default: ballot.kind.rawValue
        }
    }

    private func who(_ ballot: Report.Ballot, report: Report) -> String {
        // The mirror read is always the resolving app's vendor's.
        if ballot.kind == .mirror { return "vendor \(report.app.vendor)" }
        return ballot.app == report.app.id ? "\(ballot.app) (this app)" : ballot.app
    }

    // MARK: This app

    private func slotLine(_ slot: Int?, report: Report) -> String {
        if let slot { return "Serves selection slot \(slot)." }
        if let selections = report.sources.first(where: { $0.place == .selection }), !selections.isAvailable {
            return "Serves no selection slot: the X display cannot be used."
        }
        return "Serves no selection slot yet."
    }

    private func mirrorLine(_ report: Report) -> String {
        guard let store = report.mirrorStore else { return "No vendor mirror." }
        let label = "Mirror of \(report.app.vendor) (\(store) store):"
        if let record = report.mirrorRecord {
            if record.id == report.identifier { return "\(label) holds this identifier." }
            return "\(label) holds \(record.id.hex.prefix(8))..."
        }
        if report.repairs.contains(.written(.mirror)) {
            return "\(label) was empty, now holds it."
        }
        return "\(label) empty."
    }

    private func sourcesLine(_ report: Report) -> String {
        let names: [Report.Place: String] = [
            .selection: "selections", .fileSlot: "file slots", .localCache: "local cache", .mirror: "mirror"
        ]
        let parts = report.sources.map { status -> String in
            let name = names[status.place] ?? status.place.rawValue
            switch status {
            case .read(_, let records): return "\(name) \(records)"
            case .unavailable: return "\(name) unavailable"
            case .notUsed: return "no \(name)"
            }
        }
        return "Read: " + parts.joined(separator: ", ")
    }

    // MARK: Text

    /// 40 hex digits in five groups of eight, which a person can read aloud and compare.
    static func grouped(_ hex: String) -> String {
        var groups: [Substring] = []
        var rest = Substring(hex)
        while !rest.isEmpty {
            groups.append(rest.prefix(8))
            rest = rest.dropFirst(8)
        }
        return groups.joined(separator: " ")
    }

    private static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }

    private static func padded(_ text: String, to width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
