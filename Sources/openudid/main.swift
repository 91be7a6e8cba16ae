// openudid: the command-line face of the OpenUDID library. It parses, calls
// the library, and prints; every decision lives in the library.
import Foundation
import OpenUDID

let usage = """
usage: openudid <command> [options]

commands:
  get --app ID [--json] [--scope shared|app]
                          resolve once and print the identifier
  serve --app ID          participate until SIGINT/SIGTERM; print the identifier
                          once the slot is served, and again whenever it changes
  slots [--json]          list every occupied selection slot and file slot
  remove-app ID           delete the app's file slot and local cache
  opt-out --app ID [--undo]
                          opt one app out (or back in)
  opt-out --all [--undo]  opt the user out for every app (or back in)

options for every command:
  --display NAME          X display (default: $DISPLAY); --no-display to use none
  --no-files              use no file slots and no local cache (experiments)
  --namespace NAME        a separate set of slots and files, for experiments
  --policy follow|keep    follow the consensus (default) or keep the app's own value
  --mirror automatic|secret-service|file|none
                          where the per-vendor mirror lives (default: automatic)
  --vendor NAME           the app's vendor (default: the id's first two parts)
  --slots N               the number of selection slots (default: 100)
  --help                  this text

exit status: 0 success; 1 the operation failed (the message says why);
2 the command was used wrongly.
"""

let commonHelp = """
options:
  --display NAME          X display (default: $DISPLAY)
  --no-display            use no X display: files and the mirror only
  --no-files              use no file slots and no local cache (experiments)
  --namespace NAME        a separate set of slots and files, for experiments
  --policy follow|keep    follow the consensus (default) or keep the app's own value
  --mirror automatic|secret-service|file|none
  --vendor NAME           the app's vendor (default: the id's first two parts)
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
    """,
    "serve": """
    usage: openudid serve --app ID [options]

    Participates until SIGINT or SIGTERM: serves the app's record in the lowest
    free selection slot and resolves again whenever another slot changes.
    Prints the identifier once the slot is served, then a line on every change.
    """,
    "slots": """
    usage: openudid slots [--json] [options]

    Lists every occupied selection slot and file slot: slot, app, vendor,
    identifier, opted out, born. Records that fail validation are listed with
    the reason.
    """,
    "remove-app": """
    usage: openudid remove-app ID [--namespace NAME]

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

let arguments: Arguments
do {
    arguments = try Arguments(Array(words.dropFirst()),
                              valued: ["app", "display", "namespace", "policy", "mirror", "vendor", "slots", "scope"],
                              flags: ["json", "undo", "all", "help", "no-display", "no-files"])
} catch {
    fail("\(error.description); see openudid --help", status: Exit.usage)
}
if arguments.has("help") {
    if let help = commandHelp[command] {
        printLine(help + "\n" + commonHelp)
    } else {
        printLine(usage)
    }
    exit(Exit.success)
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
        default: fail("--policy must be follow or keep, not \"\(policy)\"", status: Exit.usage)
        }
    }
    if let mirror = arguments[option: "mirror"] {
        guard let choice = MirrorChoice(name: mirror) else {
            fail("--mirror must be automatic, secret-service, file or none, not \"\(mirror)\"", status: Exit.usage)
        }
        configuration.mirror = choice
    }
    if let count = arguments[option: "slots"] {
        guard let value = Int(count), (1...10_000).contains(value) else { fail("--slots must be 1 to 10000", status: Exit.usage) }
        configuration.slotCount = value
    }
    return configuration
}

func handle(app: String? = nil) -> OpenUDID {
    guard let app = app ?? arguments[option: "app"] else { fail("\(command) needs --app ID", status: Exit.usage) }
    do {
        return try OpenUDID(app: app, vendor: arguments[option: "vendor"], configuration: configuration())
    } catch {
        fail(error.description, status: error.kind == .invalidApp || error.kind == .invalidNamespace ? Exit.usage : Exit.failure)
    }
}

switch command {
case "get":
    let udid = handle()
    let report = udid.resolve()
    let scope = arguments[option: "scope"] ?? "shared"
    guard scope == "shared" || scope == "app" else { fail("--scope must be shared or app", status: Exit.usage) }
    if arguments.has("json") {
        printJSON(report.jsonObject)
    } else {
        printLine(scope == "app" ? udid.value(scope: .app) : report.identifier.hex)
    }

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
            printLine(change.identifier.hex)
        }
    }
    done.wait()
    participation.stop()
    exit(Exit.success)

case "slots":
    let survey: Survey
    do { survey = try Survey.take(configuration: configuration()) } catch { fail(error.description, status: Exit.failure) }
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
        printLine("SLOT        APP                            VENDOR           ID                                        OPTED-OUT BORN")
        for entry in survey.entries {
            let where_ = entry.kind == "selection" ? "selection \(entry.slot ?? 0)" : "file"
            switch entry.record {
            case .success(let record):
                let born = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(record.born) / 1000))
                printLine([where_.padding(toLength: 11, withPad: " ", startingAt: 0), record.app.padding(toLength: 30, withPad: " ", startingAt: 0),
                           record.vendor.padding(toLength: 16, withPad: " ", startingAt: 0), record.id.hex,
                           (record.optOut ? "yes" : "no").padding(toLength: 9, withPad: " ", startingAt: 0), born].joined(separator: " "))
            case .failure(let rejection):
                printLine("\(where_.padding(toLength: 11, withPad: " ", startingAt: 0)) rejected: \(rejection)")
            }
        }
        for status in survey.unavailable { FileHandle.standardError.write(Data("openudid: \(status)\n".utf8)) }
    }

case "remove-app":
    guard let app = arguments.positional.first ?? arguments[option: "app"] else { fail("remove-app needs an app id", status: Exit.usage) }
    do {
        try OpenUDID.removeApp(app, namespace: arguments[option: "namespace"])
    } catch {
        fail(error.description, status: error.kind == .invalidApp ? Exit.usage : Exit.failure)
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
    fail("unknown command \"\(command)\"; see openudid --help", status: Exit.usage)
}
exit(Exit.success)
