import CommandLineKit
import OpenUDIDKit

// The tool's grammar, written once: the parser reads it, and every help text is
// generated from it.

private let app = Option.value("app", "ID", help: "the app's reverse-DNS id, such as com.acme.notes", required: true)
private let scope = Option.value(
    "scope", "SCOPE", help: "print the identifier all apps share, or a UUID derived for this app alone",
    default: "shared", check: .oneOf(["shared", "app"]))
private let namespace = Option.value(
    "namespace", "NAME", help: "a separate set of slots and files, for experiments",
    check: .custom { name in
        StoragePaths.isValidNamespace(name) ? nil : StoragePathsError(.invalidNamespace(name)).description
    })

/// The options of the commands that resolve (get, serve).
private let resolving: [Option] = [
    .value("display", "NAME", help: "X display (default: $DISPLAY); a display named here must answer"),
    .flag("no-display", help: "use no X display: files and the mirror only"),
    .flag("no-files", help: "use no file slots and no local cache (experiments)"),
    namespace,
    .value("policy", "POLICY", help: "follow the consensus (default) or keep the app's own value", check: .oneOf(["follow", "keep"])),
    .value(
        "mirror", "MIRROR", help: "where the per-vendor mirror lives (default: automatic)",
        check: .oneOf(["automatic", "secret-service", "file", "none"], alsoAccepting: ["auto"])),
    .value(
        "vendor", "NAME", help: "the app's vendor (default: the id's first two parts, three under io.github. and other hosting prefixes)",
        check: .custom { vendor in
            do throws(IdentityError) { try AppIdentity.validate(vendor, as: .vendor) } catch { return error.description }
            return nil
        }),
    .value("slots", "N", help: "the number of selection slots (default: 100)", check: .integer(in: 1...10_000)),
    .value(
        "consent", "POLICY", help: "required: take part only once the user consented (openudid consent); default: not-required",
        check: .oneOf(["required", "not-required"]))
]

/// The options of `resolving` other than `names`, hidden: a command accepts them
/// (scripts pass one set of options to every command) but does nothing with them,
/// so its help leaves them out.
private func ignoredResolvingOptions(besides names: [String]) -> [Option] {
    resolving.filter { !names.contains($0.name) }.map(\.hidden)
}

/// The option of `resolving` named `name`.
private func resolvingOption(_ name: String) -> Option {
    guard let option = resolving.first(where: { $0.name == name }) else { preconditionFailure("no --\(name) among the resolving options") }
    return option
}

private let json = Option.flag("json", help: "print the answer as JSON, for scripts")

/// The `openudid` tool and its commands.
let tool = Command(
    "openudid",
    abstract: "share one identifier between cooperating desktop apps",
    subcommands: [
        Command(
            "get", abstract: "resolve once and print the identifier",
            discussion: """
                Resolves once and prints the identifier: 40 hex digits (all zero when
                opted out), or with --scope app a UUID derived for this app alone. With
                --json, prints the identifier with its provenance: the vote, the sources
                and whether each answered, rejected records, and what was written where
                (docs/PROTOCOL.md, section 12).

                Exits with status 3 after printing when files are in use but no file slot,
                local cache or mirror holds the identifier afterwards (every write failed
                or was skipped): the identifier is not saved and the next call may print
                another; the message on standard error says why.

                Exits with status 5 after printing (3 wins when both apply) when the X
                display in DISPLAY cannot be reached: the identifier then comes from the
                file slots and the mirror alone, and the apps on that display may share
                another. The message on standard error says why and what to do;
                --no-display leaves the display unused on purpose (status 0).
                """,
            options: [app, .flag("json", help: "print the identifier with its provenance as JSON"), scope] + resolving),
        Command(
            "serve", abstract: "participate until SIGINT/SIGTERM; print the identifier whenever it changes",
            discussion: """
                Participates until SIGINT or SIGTERM: serves the app's record in the lowest
                free selection slot and resolves again whenever another slot changes.
                Prints the identifier once the slot is served, then a line on every change;
                with --scope app, the UUID derived for this app alone.

                When the X display in DISPLAY cannot be reached, says so on standard error
                (why, and what to do), shares through the file slots and the mirror, and
                takes part in the selections once the display answers; it still exits
                with status 0 when stopped.
                """,
            options: [app, scope] + resolving),
        Command(
            "slots", abstract: "list every occupied selection slot and file slot",
            discussion: """
                Lists every occupied selection slot and file slot: slot, app, vendor,
                identifier, opted out, born. Records that fail validation are listed with
                the reason. Exits with status 5 after listing the file slots when the X
                display in DISPLAY cannot be reached (standard error says why).
                """,
            options: [
                .flag("json", help: "print the slots as JSON"), resolvingOption("display"),
                .flag("no-display", help: "use no X display: list no selection slots"),
                .flag("no-files", help: "list no file slots"), namespace, resolvingOption("slots")
            ] + ignoredResolvingOptions(besides: ["display", "no-display", "no-files", "namespace", "slots"])),
        Command(
            "remove-app", abstract: "delete the app's file slot and local cache",
            discussion: """
                Deletes what uninstalling the app together with its data would: its file
                slot and its local cache. Other apps and the vendor mirror are untouched:
                the mirror keeps the identifier for the vendor's other apps, and the
                command says where; forget --all or reset removes it. Stop the app's
                process yourself.
                """,
            synopses: ["ID [--namespace NAME]", "--app ID [--namespace NAME]"],
            options: [.value("app", "ID", help: "the app's reverse-DNS id, instead of the word ID"), namespace],
            arguments: ["ID"]),
        Command(
            "consent", abstract: "record, withdraw or show the user's consent for one app",
            discussion: """
                Records the user's consent for the app (grant), withdraws it and erases
                the app's file slot and local cache, and the vendor's mirror when it
                carries the app's id (withdraw), or prints granted or absent (status).
                An app run with --consent required reads, generates, writes and
                publishes nothing, and reports all zeros, until consent is granted.
                With --json, each prints the app's consent afterwards:
                {"app": ID, "consent": "granted" or "absent"}.
                """,
            synopses: ["--app ID grant|withdraw|status [--json] [--namespace NAME]"],
            options: [app, json, namespace] + ignoredResolvingOptions(besides: ["namespace"]),
            arguments: ["grant|withdraw|status"]),
        Command(
            "forget", abstract: "remove everything the library wrote for this user (--dry-run lists it)",
            discussion: """
                Removes every file slot, local cache, consent record, mirror file, mirror
                item in the Secret Service and marker the library wrote for this user, in
                every namespace, and prints each. With --dry-run prints them and removes
                nothing. Stop the participating apps first, or they write their copies again.
                With --json, prints {"dryRun", "files", "keyringItems", "problems"}: what
                was (or would be) removed, and what could not be.
                """,
            synopses: ["--all [--dry-run] [--json]"],
            options: [
                .flag("all", help: "everything, for every app (required)"),
                .flag("dry-run", help: "list what would be removed; remove nothing"),
                json
            ]),
        Command(
            "reset", abstract: "give every app a new identifier, and never the old one again",
            discussion: """
                Resets the shared identifier for the user: removes every copy of it (file
                slots, local caches, file mirrors, Secret Service items of the namespace)
                and raises the reset generation, so that every participating app moves to
                a new identifier: running apps within a second, the others on their next
                start. A copy that could not be removed (a locked keyring) is superseded
                and overwritten when next read. Opt-outs and consent stay as they are.
                Prints the new generation and each copy removed; with --json,
                {"generation", "files", "keyringItems", "problems"} (the copies left in place).
                """,
            synopses: ["[--namespace NAME] [--json]"],
            options: [namespace, json]),
        Command(
            "opt-out", abstract: "opt one app out, or with --all the user for every app (--undo reverses)",
            discussion: """
                Opts one app out (it reports all zeros, publishes that it opted out and
                does not vote), or with --all the user for every app. --undo reverses it
                and brings the previous identifier back; for a new one, run
                openudid reset as well. --status changes nothing and prints whether the
                user opted out for every app, and with --app whether that app did.
                With --json, each prints the opt-out afterwards:
                {"optedOutEverywhere", "app", "appOptedOut"} (the last two with --app).
                """,
            synopses: [
                "--app ID [--undo] [--json] [--namespace NAME]", "--all [--undo] [--json]", "--status [--app ID] [--json]"
            ],
            options: [
                .value("app", "ID", help: "the app to opt out"),
                .flag("all", help: "opt the user out for every app"),
                .flag("undo", help: "opt back in"),
                .flag("status", help: "print the opt-out of the user (and with --app, of the app); change nothing"),
                json, namespace
            ] + ignoredResolvingOptions(besides: ["namespace"]))
    ],
    epilogue: """
        exit status: 0 success; 1 the operation failed (the message says why);
        2 the command was used wrongly; 3 (get) the identifier was printed but could
        not be saved anywhere, so the next call may print another; 4 the display
        given with --display cannot be opened; 5 (get, slots) the display in DISPLAY
        could not be reached, so the answer lacks the selections.
        """
)

/// `slots --json`: every occupied slot, and the sources that could not be read.
struct SlotsDocument: Encodable {
    /// One slot; `slot` is null for a file slot, and either the record's fields or
    /// `rejected` and `place` are present.
    struct Entry: Encodable {
        let entry: Survey.Entry

        enum CodingKeys: String, CodingKey {
            case kind, slot, owner, app, vendor, id, optOut, born, generation, rejected, place
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(entry.kind, forKey: .kind)
            try container.encode(entry.slot, forKey: .slot)
            try container.encodeIfPresent(entry.holder?.description, forKey: .owner)
            switch entry.record {
            case .success(let record):
                try container.encode(record.app, forKey: .app)
                try container.encode(record.vendor, forKey: .vendor)
                try container.encode(record.id.hex, forKey: .id)
                try container.encode(record.optOut, forKey: .optOut)
                try container.encode(record.born, forKey: .born)
                try container.encode(record.generation, forKey: .generation)
            case .failure(let rejection):
                try container.encode(rejection.reason, forKey: .rejected)
                try container.encode(rejection.place, forKey: .place)
            }
        }
    }

    let slots: [Entry]
    let unavailable: [String]

    init(_ survey: Survey) {
        slots = survey.entries.map(Entry.init)
        unavailable = survey.unavailable.map(\.description)
    }
}
