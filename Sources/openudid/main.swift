// openudid: the command-line face of the OpenUDID library. It parses, calls
// the library, and prints; every decision lives in the library.
import Foundation
import OpenUDIDKit
import XSelection

let usage = """
usage: openudid <command> [options]

commands:
  get --app ID [--json] [--scope shared|app]
                          resolve once and print the identifier
  serve --app ID [--scope shared|app]
                          participate until SIGINT/SIGTERM; print the identifier
                          once the slot is served, and again whenever it changes
  slots [--json]          list every occupied selection slot and file slot
  remove-app ID           delete the app's file slot and local cache
  opt-out --app ID [--undo]
                          opt one app out (or back in)
  opt-out --all [--undo]  opt the user out for every app (or back in)

options of get, serve, slots and opt-out (remove-app takes --namespace alone):
  --display NAME          X display (default: $DISPLAY); --no-display to use none
  --no-files              use no file slots and no local cache (experiments)
  --namespace NAME        a separate set of slots and files, for experiments
  --policy follow|keep    follow the consensus (default) or keep the app's own value
  --mirror automatic|secret-service|file|none
                          where the per-vendor mirror lives (default: automatic)
  --vendor NAME           the app's vendor (default: the id's first two parts,
                          three under io.github. and other hosting prefixes)
  --slots N               the number of selection slots (default: 100)
  --help                  this text

exit status: 0 success; 1 the operation failed (the message says why);
2 the command was used wrongly; 3 (get) the identifier was printed but could
not be saved anywhere, so the next call may print another; 4 the display
given with --display cannot be opened.
"""

let commonHelp = """
options:
  --display NAME          X display (default: $DISPLAY)
  --no-display            use no X display: files and the mirror only
  --no-files              use no file slots and no local cache (experiments)
  --namespace NAME        a separate set of slots and files, for experiments
  --policy follow|keep    follow the consensus (default) or keep the app's own value
  --mirror automatic|secret-service|file|none
  --vendor NAME           the app's vendor (default: the id's first two parts,
                          three under io.github. and other hosting prefixes)
  --slots N               the number of selection slots (default: 100)
"""

let commandHelp: [String: String] = [
    "get": """
    usage: openudid get --app ID [--json] [--scope shared|app] [options]

    Resolves once and prints the identifier: 40 hex digits (all zero when
    opted out), or with --scope app a UUID derived for this app alone. With
    --json, prints the identifier with its provenance: the vote, the sources
    and whether each answered, rejected records, and what was written where
    (docs/PROTOCOL.md, section 12).

    Exits with status 3 after printing when files are in use but no file slot,
    local cache or mirror holds the identifier afterwards (every write failed
    or was skipped): the identifier is not saved and the next call may print
    another; the message on standard error says why.
    """,
    "serve": """
    usage: openudid serve --app ID [--scope shared|app] [options]

    Participates until SIGINT or SIGTERM: serves the app's record in the lowest
    free selection slot and resolves again whenever another slot changes.
    Prints the identifier once the slot is served, then a line on every change;
    with --scope app, the UUID derived for this app alone.
    """,
    "slots": """
    usage: openudid slots [--json] [options]

    Lists every occupied selection slot and file slot: slot, app, vendor,
    identifier, opted out, born. Records that fail validation are listed with
    the reason.
    """,
    "remove-app": """
    usage: openudid remove-app ID [--namespace NAME]
           openudid remove-app --app ID [--namespace NAME]

    Deletes what uninstalling the app together with its data would: its file
    slot and its local cache. Other apps and the vendor mirror are untouched.
    Stop the app's process yourself.
    """,
    "opt-out": """
    usage: openudid opt-out --app ID [--undo] [options]
           openudid opt-out --all [--undo]

    Opts one app out (it reports all zeros, publishes that it opted out and
    does not vote), or with --all the user for every app. --undo reverses it.
    """,
]

enum Exit {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 2
    /// `get` printed an identifier that no durable place holds.
    static let unsaved: Int32 = 3
    /// The display named with `--display` cannot be opened.
    static let noDisplay: Int32 = 4
}

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("openudid: \(message)\n".utf8))
    exit(status)
}

func printLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

func printJSON(_ object: Any) {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data("{}".utf8)
    FileHandle.standardOutput.write(data + Data("\n".utf8))
}

let words = Array(CommandLine.arguments.dropFirst())
guard let command = words.first, command != "--help", command != "-h", command != "help" else {
    printLine(usage)
    exit(words.isEmpty ? Exit.usage : Exit.success)
}

/// The options every command that resolves takes.
let commonValued: Set<String> = ["display", "namespace", "policy", "mirror", "vendor", "slots"]
let commonFlags: Set<String> = ["help", "no-display", "no-files"]

/// What each command accepts: its options, its flags, and how many positional words.
let grammar: [String: (valued: Set<String>, flags: Set<String>, positionals: Int)] = [
    "get": (commonValued.union(["app", "scope"]), commonFlags.union(["json"]), 0),
    "serve": (commonValued.union(["app", "scope"]), commonFlags, 0),
    "slots": (commonValued, commonFlags.union(["json"]), 0),
    "remove-app": (["app", "namespace"], ["help"], 1),
    "opt-out": (commonValued.union(["app"]), commonFlags.union(["undo", "all"]), 0),
]

guard let accepted = grammar[command] else {
    fail("unknown command \"\(command)\"; see openudid --help", status: Exit.usage)
}
let arguments: Arguments
do {
    let everyValued = grammar.values.reduce(into: Set<String>()) { $0.formUnion($1.valued) }
    let everyFlag = grammar.values.reduce(into: Set<String>()) { $0.formUnion($1.flags) }
    arguments = try Arguments(Array(words.dropFirst()), valued: accepted.valued, flags: accepted.flags, command: command,
                              elsewhere: everyValued.union(everyFlag))
} catch {
    fail("\(error.description); see openudid --help", status: Exit.usage)
}
if arguments.has("help") {
    printLine(commandHelp[command].map { $0 + "\n" + commonHelp } ?? usage)
    exit(Exit.success)
}

// Every argument is checked here, before anything reads or writes a file.
if arguments.positional.count > accepted.positionals {
    let extra = arguments.positional[accepted.positionals]
    let takes = accepted.positionals == 0 ? "takes no words besides its options" : "takes one app id"
    fail("unexpected argument \(quoted(extra)): \(command) \(takes); see openudid \(command) --help", status: Exit.usage)
}

/// `text` in double quotes, for messages.
func quoted(_ text: String) -> String { "\"\(text)\"" }

/// The app id the command names: `--app ID`, or for remove-app also the positional ID.
let appArgument: String? = {
    if command == "remove-app", let positional = arguments.positional.first {
        if arguments[option: "app"] != nil {
            fail("remove-app takes the app id once: as a word or with --app, not both", status: Exit.usage)
        }
        return positional
    }
    return arguments[option: "app"]
}()

if let app = appArgument {
    do { _ = try AppIdentity(app, vendor: arguments[option: "vendor"]) } catch { fail(error.description, status: Exit.usage) }
} else if let vendor = arguments[option: "vendor"] {
    do { try AppIdentity.validate(vendor, as: .vendor) } catch { fail(error.description, status: Exit.usage) }
}
if let namespace = arguments[option: "namespace"], !StoragePaths.isValidNamespace(namespace) {
    fail(StoragePathsError(.invalidNamespace(namespace)).description, status: Exit.usage)
}
if let scope = arguments[option: "scope"], scope != "shared", scope != "app" {
    fail("--scope must be shared or app, not \(quoted(scope))", status: Exit.usage)
}
if arguments[option: "display"] != nil, arguments.has("no-display") {
    fail("--display and --no-display contradict each other; give one", status: Exit.usage)
}
switch command {
case "get", "serve":
    if appArgument == nil { fail("\(command) needs --app ID", status: Exit.usage) }
case "remove-app":
    if appArgument == nil { fail("remove-app needs an app id", status: Exit.usage) }
case "opt-out":
    if arguments.has("all"), let app = appArgument {
        fail("opt-out takes --app \(app) or --all, not both: --all opts the user out for every app", status: Exit.usage)
    }
    if !arguments.has("all"), appArgument == nil { fail("opt-out needs --app ID or --all", status: Exit.usage) }
default:
    break
}

func configuration() -> OpenUDID.Configuration {
    var configuration = OpenUDID.Configuration()
    configuration.display = arguments[option: "display"]
    configuration.usesSelections = !arguments.has("no-display")
    configuration.usesFiles = !arguments.has("no-files")
    configuration.namespace = arguments[option: "namespace"]
    if let policy = arguments[option: "policy"] {
        switch policy {
        case "follow": configuration.policy = .followConsensus
        case "keep": configuration.policy = .keepLocal
        default: fail("--policy must be follow or keep, not \(quoted(policy))", status: Exit.usage)
        }
    }
    if let mirror = arguments[option: "mirror"] {
        guard let choice = MirrorChoice(name: mirror) else {
            fail("--mirror must be automatic, secret-service, file or none, not \(quoted(mirror))", status: Exit.usage)
        }
        configuration.mirror = choice
    }
    if let count = arguments[option: "slots"] {
        guard let value = Int(count), (1...10_000).contains(value) else { fail("--slots must be 1 to 10000", status: Exit.usage) }
        configuration.slotCount = value
    }
    return configuration
}
// Built once here so that its own checks run before anything touches a file.
let checkedConfiguration = configuration()

// A display named on the command line must answer: silently working without it
// would hide a typo. ($DISPLAY is the session's business: without a server
// there, the tool works from files, and the report says so.)
if ["get", "serve", "slots"].contains(command), let display = arguments[option: "display"] {
    do throws(XSelectionError) {
        try SelectionReader(display: display).close()
    } catch {
        fail(error.message, status: Exit.noDisplay)
    }
}

func handle() -> OpenUDID {
    guard let app = appArgument else { fail("\(command) needs --app ID", status: Exit.usage) }
    do {
        return try OpenUDID(app: app, vendor: arguments[option: "vendor"], configuration: checkedConfiguration)
    } catch {
        fail(error.description, status: error.kind == .invalidApp || error.kind == .invalidNamespace ? Exit.usage : Exit.failure)
    }
}

/// Why no durable place holds the identifier after `report`, or `nil` when one does
/// (or files are not in use, or the app opted out).
func unsavedReason(_ report: Report) -> String? {
    guard checkedConfiguration.usesFiles, report.optOut == nil else { return nil }
    let saved = report.repairs.contains { repair in
        switch repair.outcome {
        case .written, .unchanged: true
        case .skipped, .failed: false
        }
    }
    if saved { return nil }
    let places = report.repairs.isEmpty ? "nothing was written" : report.repairs.map(\.description).joined(separator: "; ")
    return "the identifier could not be saved anywhere (\(places)); the next call may print another one"
}

switch command {
case "get":
    let udid = handle()
    let report = udid.resolve()
    if arguments.has("json") {
        printLine(String(decoding: report.json(), as: UTF8.self))
    } else {
        printLine(arguments[option: "scope"] == "app" ? report.appScoped.uuidString.lowercased() : report.identifier.hex)
    }
    if let why = unsavedReason(report) { fail(why, status: Exit.unsaved) }

case "serve":
    let udid = handle()
    // A parent may have started us with these signals blocked (a mask inherited
    // through exec); unblock them so that SIGTERM really stops the service.
    var stopSignals = sigset_t()
    sigemptyset(&stopSignals)
    sigaddset(&stopSignals, SIGINT)
    sigaddset(&stopSignals, SIGTERM)
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
    let appScoped = arguments[option: "scope"] == "app"
    let participation = udid.participate()
    let done = DispatchSemaphore(value: 0)
    var sources: [DispatchSourceSignal] = []
    for number in [SIGINT, SIGTERM] {
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { done.signal() }
        source.resume()
        sources.append(source)
    }
    // Detached: the main thread is about to block waiting for a signal.
    Task.detached {
        for await change in participation.changes {
            printLine(appScoped ? change.report.appScoped.uuidString.lowercased() : change.identifier.hex)
        }
    }
    done.wait()
    participation.stop()
    exit(Exit.success)

case "slots":
    let survey: Survey
    do { survey = try Survey.take(configuration: checkedConfiguration) } catch { fail(error.description, status: Exit.failure) }
    if arguments.has("json") {
        printJSON([
            "slots": survey.entries.map { entry -> [String: Any] in
                var object: [String: Any] = ["kind": entry.kind, "slot": entry.slot.map { NSNumber(value: $0) } ?? NSNull()]
                switch entry.record {
                case .success(let record):
                    object.merge(["app": record.app, "vendor": record.vendor, "id": record.id.hex, "optOut": record.optOut,
                                  "born": NSNumber(value: record.born)]) { $1 }
                case .failure(let rejection):
                    object["rejected"] = rejection.reason
                    object["place"] = rejection.place
                }
                if let holder = entry.holder { object["owner"] = holder.description }
                return object
            },
            "unavailable": survey.unavailable.map(\.description),
        ])
    } else {
        printLine("SLOT           APP                            VENDOR           ID                                        OPTED-OUT BORN")
        for entry in survey.entries {
            // Wide enough for "selection 9999": a narrower column would cut "selection 10" to "selection 1".
            let where_ = (entry.kind == "selection" ? "selection \(entry.slot ?? 0)" : "file").padding(toLength: 14, withPad: " ", startingAt: 0)
            switch entry.record {
            case .success(let record):
                let born = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(record.born) / 1000))
                printLine([where_, record.app.padding(toLength: 30, withPad: " ", startingAt: 0),
                           record.vendor.padding(toLength: 16, withPad: " ", startingAt: 0), record.id.hex,
                           (record.optOut ? "yes" : "no").padding(toLength: 9, withPad: " ", startingAt: 0), born].joined(separator: " "))
            case .failure(let rejection):
                printLine("\(where_) rejected: \(rejection)")
            }
        }
        for status in survey.unavailable { FileHandle.standardError.write(Data("openudid: \(status)\n".utf8)) }
    }

case "remove-app":
    guard let app = appArgument else { fail("remove-app needs an app id", status: Exit.usage) }
    do {
        try OpenUDID.removeApp(app, namespace: arguments[option: "namespace"])
    } catch {
        fail(error.description, status: error.kind == .invalidApp || error.kind == .invalidNamespace ? Exit.usage : Exit.failure)
    }

case "opt-out":
    let undo = arguments.has("undo")
    do {
        if arguments.has("all") {
            if undo { try OpenUDID.optInEverywhere() } else { try OpenUDID.optOutEverywhere() }
        } else {
            let udid = handle()
            if undo { try udid.optIn() } else { try udid.optOut() }
        }
    } catch {
        fail(error.description, status: Exit.failure)
    }

default:
    fail("unknown command \(quoted(command)); see openudid --help", status: Exit.usage)
}
exit(Exit.success)
