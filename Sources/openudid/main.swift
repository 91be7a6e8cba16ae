// openudid: the command-line face of the OpenUDID library. It parses, calls
// the library, and prints; every decision lives in the library.
import CommandLineKit
import FoundationEssentials
import Glibc
import OpenUDIDKit
import XSelection

enum Exit {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = UsageError.exitStatus
    /// `get` printed an identifier that no durable place holds.
    static let unsaved: Int32 = 3
    /// The display named with `--display` cannot be opened.
    static let noDisplay: Int32 = 4
    /// `get` or `slots` answered without the selections: the X display they wanted
    /// (`$DISPLAY`) could not be reached.
    static let noSelections: Int32 = 5
}

func fail(_ message: String, status: Int32) -> Never {
    printLine("openudid: \(message)", to: STDERR_FILENO)
    exit(status)
}

/// Prints `text` and a newline on standard output (or `descriptor`), unbuffered:
/// a caller reading `serve`'s lines must see each as it comes.
func printLine(_ text: String, to descriptor: Int32 = STDOUT_FILENO) {
    writeAll(text + "\n", to: descriptor)
}

/// Prints `value` as pretty JSON with sorted keys.
func printJSON(_ value: some Encodable) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
    printLine(String(decoding: data, as: UTF8.self))
}

/// Left-aligns `text` in a column of `width` characters.
func padded(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

// Every argument is checked here, before anything reads or writes a file: each
// value by the parser, and below what involves more than one option.
let parsed = tool.parseOrExit()
let command = parsed.name

/// The app id the command names: `--app ID`, or for remove-app also the word ID.
let appArgument: String? = {
    if command == "remove-app", let word = parsed.arguments.first {
        if parsed["app"] != nil {
            parsed.fail("takes the app id once: as a word or with --app, not both")
        }
        return word
    }
    return ["slots", "forget", "reset"].contains(command) ? nil : parsed["app"]
}()

if let app = appArgument {
    do { _ = try AppIdentity(app, vendor: command == "remove-app" ? nil : parsed["vendor"]) } catch {
        parsed.fail(error.description)
    }
}
if !["remove-app", "forget", "reset"].contains(command), parsed["display"] != nil, parsed.has("no-display") {
    parsed.fail("--display and --no-display contradict each other; give one")
}
/// What `consent` is asked to do.
let consentActions = ["grant", "withdraw", "status"]
switch command {
case "remove-app":
    if appArgument == nil { parsed.fail("needs an app id: give ID or --app ID") }
case "opt-out":
    if parsed.has("all"), appArgument != nil {
        parsed.fail("takes --app or --all, not both: --all opts the user out for every app")
    }
    if parsed.has("status") {
        if parsed.has("undo") { parsed.fail("--status changes nothing, so it takes no --undo") }
    } else if !parsed.has("all"), appArgument == nil {
        parsed.fail("needs --app ID, --all or --status")
    }
case "consent":
    guard let action = parsed.arguments.first else { parsed.fail("needs grant, withdraw or status after --app ID") }
    if !consentActions.contains(action) {
        parsed.fail("unknown action \(quoted(action)): consent takes grant, withdraw or status")
    }
default:
    break
}

/// The library configuration the options describe; every value was checked by the parser.
func configuration() -> OpenUDID.Configuration {
    var configuration = OpenUDID.Configuration()
    configuration.display = parsed["display"]
    configuration.usesSelections = !parsed.has("no-display")
    configuration.usesFiles = !parsed.has("no-files")
    configuration.namespace = parsed["namespace"]
    if let policy = parsed["policy"] { configuration.policy = policy == "keep" ? .keepLocal : .followConsensus }
    if let mirror = parsed["mirror"].flatMap(MirrorChoice.init(name:)) { configuration.mirror = mirror }
    if let count = parsed.integer("slots") { configuration.slotCount = count }
    if parsed["consent"] == "required" { configuration.requiresConsent = true }
    return configuration
}
// Built once here, before anything touches a file; remove-app takes none of these options.
let checkedConfiguration = ["remove-app", "forget", "reset"].contains(command) ? OpenUDID.Configuration() : configuration()

// A display named on the command line must answer: silently working without it
// would hide a typo. ($DISPLAY is the session's business: without a server
// there, the tool works from files, and the report says so.)
if ["get", "serve", "slots"].contains(command), let display = parsed["display"] {
    do throws(XSelectionError) {
        try SelectionReader(display: display).close()
    } catch {
        fail(error.message, status: Exit.noDisplay)
    }
}

func handle() -> OpenUDID {
    guard let app = appArgument else { parsed.fail("needs --app ID") }
    do {
        return try OpenUDID(app: app, vendor: parsed["vendor"], configuration: checkedConfiguration)
    } catch {
        fail(error.description, status: error.kind == .invalidApp || error.kind == .invalidNamespace ? Exit.usage : Exit.failure)
    }
}

/// What to say when the X display this command wanted could not be reached, going by
/// the selections' entry among `sources`: the reason and the remedy the library gave,
/// and `consequence`. Nil when the display answered, or none was wanted (no DISPLAY,
/// --no-display), which the report says in its own words.
func unreachableDisplay(_ sources: [SourceStatus], _ consequence: String) -> String? {
    guard checkedConfiguration.displayName != nil else { return nil }
    for case .unavailable(.selection, let why) in sources {
        return "\(parsed.fullName): no selections: \(why). \(consequence); --no-display leaves the display unused on purpose"
    }
    return nil
}

/// Why no durable place holds the identifier after `report`, or `nil` when one does
/// (or files are not in use, or the app opted out).
func unsavedReason(_ report: Report) -> String? {
    guard checkedConfiguration.usesFiles, report.optOut == nil else { return nil }
    let saved = report.repairs.contains { repair in
        switch repair {
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
    if parsed.has("json") {
        printJSON(report)
    } else {
        printLine(parsed["scope"] == "app" ? report.appScoped.uuidString.lowercased() : report.identifier.hex)
    }
    let unreachable = unreachableDisplay(
        report.sources,
        "The identifier printed comes from the file slots and the vendor mirror alone; apps on that display may share another")
    if let unreachable { printLine(unreachable, to: STDERR_FILENO) }
    if let why = unsavedReason(report) { fail(why, status: Exit.unsaved) }
    if unreachable != nil { exit(Exit.noSelections) }

case "serve":
    // SIGINT and SIGTERM stay blocked in every thread (threads inherit the
    // mask, and none exists yet) and wait, pending, for sigwait below. A
    // signal that comes early, before the first identifier is out, is never
    // lost: a dispatch signal source installs its handler later, on another
    // thread, and a signal in between was ignored, leaving the service running.
    // (Blocking also overrides a mask a parent may have left: the signal is
    // taken by sigwait either way.)
    var stopSignals = sigset_t()
    sigemptyset(&stopSignals)
    sigaddset(&stopSignals, SIGINT)
    sigaddset(&stopSignals, SIGTERM)
    pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
    let udid = handle()
    let appScoped = parsed["scope"] == "app"
    // Printed from the participation's own thread: a task would make the
    // process wake once a second while idle (libdispatch's pool on Linux),
    // and the main thread is about to block waiting for a signal.
    let participation: Participation
    do {
        participation = try udid.participate { change in
            printLine(appScoped ? change.report.appScoped.uuidString.lowercased() : change.identifier.hex)
        }
    } catch {
        fail(error.message, status: Exit.failure)
    }
    if let unreachable = unreachableDisplay(
        participation.report.sources,
        "Until it answers, this app shares through the file slots and the vendor mirror alone; it tries the display again every second")
    {
        printLine(unreachable, to: STDERR_FILENO)
    }
    var received: Int32 = 0
    while sigwait(&stopSignals, &received) != 0 {}
    participation.close()
    exit(Exit.success)

case "slots":
    let survey: Survey
    do { survey = try Survey.take(configuration: checkedConfiguration) } catch { fail(error.description, status: Exit.failure) }
    if parsed.has("json") {
        printJSON(SlotsDocument(survey))
    } else {
        printLine("SLOT           APP                            VENDOR           ID                                        OPTED-OUT BORN")
        for entry in survey.entries {
            // Wide enough for "selection 9999": a narrower column would cut "selection 10" to "selection 1".
            let location = padded(entry.kind == "selection" ? "selection \(entry.slot ?? 0)" : "file", 14)
            switch entry.record {
            case .success(let record):
                let born = Date(timeIntervalSince1970: Double(record.born) / 1000).formatted(.iso8601)
                printLine(
                    [
                        location, padded(record.app, 30), padded(record.vendor, 16), record.id.hex,
                        padded(record.optOut ? "yes" : "no", 9), born
                    ].joined(separator: " "))
            case .failure(let rejection):
                printLine("\(location) rejected: \(rejection)")
            }
        }
        for status in survey.unavailable where status.place != .selection || checkedConfiguration.displayName == nil {
            printLine("openudid: \(status)", to: STDERR_FILENO)
        }
        // Said on purpose, so that an empty list is not taken for an empty session.
        if parsed.has("no-display") {
            printLine("openudid slots: selection slots not read: --no-display leaves the X display unused", to: STDERR_FILENO)
        }
        if parsed.has("no-files") { printLine("openudid slots: file slots not read: --no-files was given", to: STDERR_FILENO) }
    }
    if let unreachable = unreachableDisplay(survey.unavailable, "The list has the file slots alone") {
        printLine(unreachable, to: STDERR_FILENO)
        exit(Exit.noSelections)
    }

case "remove-app":
    guard let app = appArgument else { parsed.fail("needs an app id: give ID or --app ID") }
    do {
        try OpenUDID.User(namespace: parsed["namespace"]).removeApp(app)
    } catch {
        fail(error.description, status: error.kind == .invalidApp || error.kind == .invalidNamespace ? Exit.usage : Exit.failure)
    }
    if let vendor = try? AppIdentity(app).vendor {
        printLine(
            "openudid: kept for the other apps of \(vendor): its vendor mirror (the keyring item "
                + "\"\(SecretServiceMirror.label(vendor: vendor))\", or the file vendors/\(vendor).json under "
                + "$XDG_DATA_HOME/openudid); openudid forget --all or openudid reset removes it", to: STDERR_FILENO)
    }

case "consent":
    let udid = handle()
    do {
        switch parsed.arguments.first {
        case "grant": try udid.grantConsent()
        case "withdraw": try udid.withdrawConsent()
        default: break // status; the action was checked above
        }
    } catch {
        fail(error.description, status: Exit.failure)
    }
    let consent = ConsentDocument(app: udid.app.id, consent: udid.hasConsent ? "granted" : "absent")
    if parsed.has("json") {
        printJSON(consent)
    } else if parsed.arguments.first == "status" {
        printLine(consent.consent)
    }

case "opt-out":
    let undo = parsed.has("undo")
    let udid = appArgument == nil ? nil : handle()
    do {
        if parsed.has("status") {
            // Reads only.
        } else if parsed.has("all") {
            if undo {
                try OpenUDID.User().optIn()
                printLine("openudid: apps return to the identifier they had; for a new one, run openudid reset", to: STDERR_FILENO)
            } else {
                try OpenUDID.User().optOut()
            }
        } else if let udid {
            if undo { try udid.optIn() } else { try udid.optOut() }
        }
    } catch {
        fail(error.description, status: Exit.failure)
    }
    let state = OptOutDocument(optedOutEverywhere: OpenUDID.User().isOptedOut, app: udid?.app.id, appOptedOut: udid?.isOptedOut)
    if parsed.has("json") {
        printJSON(state)
    } else if parsed.has("status") {
        printLine("every app: " + (state.optedOutEverywhere ? "opted out" : "not opted out"))
        if let app = state.app, let optedOut = state.appOptedOut { printLine("\(app): " + (optedOut ? "opted out" : "not opted out")) }
    }

case "forget":
    guard parsed.has("all") else { parsed.fail("needs --all: it removes everything the library wrote for this user") }
    let dryRun = parsed.has("dry-run")
    let erasure: OpenUDID.Erasure
    do { erasure = try OpenUDID.User().forgetEverything(dryRun: dryRun) } catch { fail(error.description, status: Exit.failure) }
    if parsed.has("json") {
        printJSON(ForgetDocument(dryRun: dryRun, erasure))
    } else {
        for file in erasure.files { printLine(file) }
        for item in erasure.keyringItems { printLine("keyring: \(item)") }
        if erasure.files.isEmpty && erasure.keyringItems.isEmpty { printLine(dryRun ? "nothing to remove" : "nothing was there") }
    }
    for kept in erasure.keptCopies { printLine("openudid: still kept by the keyring: \(kept)", to: STDERR_FILENO) }
    if !erasure.problems.isEmpty {
        fail("not everything could be removed:\n" + erasure.problems.joined(separator: "\n"), status: Exit.failure)
    }

case "reset":
    let reset: OpenUDID.Reset
    do { reset = try OpenUDID.User(namespace: parsed["namespace"]).reset() } catch { fail(error.description, status: Exit.failure) }
    if parsed.has("json") {
        printJSON(ResetDocument(reset))
    } else {
        printLine("generation \(reset.generation)")
        for file in reset.files { printLine("removed \(file)") }
        for item in reset.keyringItems { printLine("removed keyring: \(item)") }
    }
    for problem in reset.problems { printLine("openudid: left in place: \(problem)", to: STDERR_FILENO) }

default:
    preconditionFailure("the parser let through a command the tool does not run: \(command)")
}
exit(Exit.success)
