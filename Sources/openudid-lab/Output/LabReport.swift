/// Everything a run found, ready to be written out.
struct LabReport: Sendable {
    /// The scenarios, judged, in catalogue order.
    let scenarios: [ScenarioResult]
    /// Where the vendor-mirror column kept its copies: `secret-service` or `file`.
    let mirrorStore: String
    /// What the reader should know about this run's environment (a fallback taken, say).
    let notes: [String]
    /// Whether only the `--quick` scenarios ran.
    let quick: Bool
    /// How many `openudid` processes the columns ran.
    var processCount = 0
    /// How long the run took, in seconds, once it is known: for the terminal and
    /// `lab.json` only, never for a tracked file (`Output.write`).
    var seconds: Double?

    /// The columns, in table order.
    var mechanisms: [MechanismKind] { MechanismKind.allCases }

    /// How the vendor-mirror column ran, in a sentence.
    var mirrorSentence: String {
        mirrorStore == "secret-service"
            ? "The vendor mirror lived in a private gnome-keyring (the freedesktop Secret Service) on a private session bus."
            : "The vendor mirror lived in the file store (`--mirror file`), one plain file per vendor in the user's data directory."
    }
}
