import OpenUDIDKit

// What `--json` prints for the commands that change or report the user's
// choices; each is documented in the command's help and in the README.

/// `consent --json`: the app's consent after the action.
struct ConsentDocument: Encodable {
    let app: String
    /// `granted` or `absent`.
    let consent: String
}

/// `opt-out --json`: the opt-out after the action (or, with `--status`, as it is).
struct OptOutDocument: Encodable {
    let optedOutEverywhere: Bool
    /// The app named with `--app`; absent without it.
    let app: String?
    /// Whether that app opted out on its own; absent without `--app`.
    let appOptedOut: Bool?
}

/// `forget --all --json`: what was removed (with `--dry-run`: what would be), and what could not be.
struct ForgetDocument: Encodable {
    let dryRun: Bool
    let files: [String]
    let keyringItems: [String]
    let problems: [String]
    /// Where a keyring keeps copies of what it deleted (KeePassXC's recycle bin), and how to empty it.
    let keptCopies: [String]

    init(dryRun: Bool, _ erasure: OpenUDID.Erasure) {
        self.dryRun = dryRun
        files = erasure.files
        keyringItems = erasure.keyringItems
        problems = erasure.problems
        keptCopies = erasure.keptCopies
    }
}

/// `reset --json`: the new generation, the copies removed, and those left in place.
struct ResetDocument: Encodable {
    let generation: Int64
    let files: [String]
    let keyringItems: [String]
    let problems: [String]

    init(_ reset: OpenUDID.Reset) {
        generation = reset.generation
        files = reset.files
        keyringItems = reset.keyringItems
        problems = reset.problems
    }
}
