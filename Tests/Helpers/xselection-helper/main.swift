// A separate process that owns selections for the tests; `xselection-helper --help`
// lists its modes, `xselection-helper <mode> --help` their options.
//
// As an owner it prints "ready <window> <client>" once it serves, "lost <name>" when
// a selection is taken from it, and runs until killed. `time` and `flood-rate` are the
// plain-Xlib baselines of the benchmark; they print their figures and exit.
import CommandLineKit
import Foundation
import XSelection

// Options several modes share, defined once.
private func selection(default name: String) -> Option { .value("selection", "NAME", help: "the selection", default: name) }
private func prefix(default name: String) -> Option {
    .value("prefix", "P", help: "the selection, or the prefix of the numbered selections", default: name)
}
private let target = Option.value("target", "T", help: "the target to serve or ask for", default: "UTF8_STRING")
private func count(default number: String) -> Option {
    .value("count", "N", help: "how many numbered selections", default: number, check: .integer(in: 1...100_000))
}
private let start = Option.value("start", "K", help: "the number of the first selection", default: "0", check: .integer(in: 0...Int.max))
private func whole(_ name: String, _ valueName: String, help: String, default value: String? = nil) -> Option {
    .value(name, valueName, help: help, default: value, check: .integer(in: 0...Int.max))
}
private func seconds(_ name: String, help: String, default value: String) -> Option {
    .value(name, "SECONDS", help: help, default: value, check: .number(atLeast: 0))
}

let helper = Command(
    "xselection-helper", abstract: "owns selections in a separate process for the tests",
    subcommands: [
        Command(
            "own", abstract: "own selections honestly through XSelection until killed",
            options: [
                prefix(default: "_XSELECTION_TEST"), count(default: "1"), start, target,
                .value("type", "TY", help: "the type of the reply (default: the target)"),
                .value("format", "F", help: "the format of the reply", default: "8", check: .oneOf(["8", "16", "32"])),
                .value("text", "S", help: "the text to serve, {i} standing for the selection's number", default: "hello"),
                .value("file", "PATH", help: "serve the bytes of PATH exactly"),
                whole("size", "BYTES", help: "serve BYTES bytes of a pattern"),
                whole("incr-threshold", "BYTES", help: "the size from which replies go by INCR"),
                .flag("if-free", help: "claim only selections nobody owns")
            ]),
        Command(
            "hostile", abstract: "own a selection as a misbehaving raw X client",
            options: [
                selection(default: "_XSELECTION_HOSTILE"),
                .value(
                    "behavior", "B", help: "how to misbehave", default: "silent",
                    check: .oneOf([
                        "silent", "wrong-property", "no-property", "bad-format", "garbage", "huge-incr", "stall-incr",
                        "die-mid-incr", "hide-others", "answer-for-others", "spoil-others"
                    ])),
                .value(
                    "others", "S[,S2,...]",
                    help: "the other owners' selections that hide-others, answer-for-others and spoil-others forge events for"),
                .value(
                    "text", "S", help: "what answer-for-others answers, for itself and the others, and spoil-others for itself",
                    default: "forged"),
                whole("size", "BYTES", help: "the size of an INCR transfer", default: "\(10 * 1024 * 1024)"),
                whole("announce", "BYTES", help: "the size an INCR transfer announces (default: its size)"),
                whole("chunk", "BYTES", help: "the size of an INCR chunk", default: "4096"),
                whole("stall-after", "BYTES", help: "stall-incr stops sending after BYTES", default: "0")
            ]),
        Command(
            "steal", abstract: "take selections from their owners again and again",
            options: [
                prefix(default: "_XSELECTION_TEST"), start, count(default: "1"),
                whole("every-ms", "MS", help: "how often to take them", default: "50"),
                .value("text", "S", help: "the text to serve", default: "hello")
            ]),
        Command(
            "stall-many", abstract: "own selections and never answer",
            options: [
                prefix(default: "_XSELECTION_TEST"), start, count(default: "1")
            ]),
        Command(
            "flood", abstract: "ask for a selection as fast as the server lets",
            options: [
                selection(default: "_XSELECTION_TEST"), target, seconds("seconds", help: "how long", default: "3"),
                whole("window", "N", help: "how many requests may be outstanding", default: "2000"),
                .flag("unread", help: "never read the replies"),
                whole("distinct-windows", "N", help: "with --unread, how many requestor windows", default: "1")
            ]),
        Command(
            "request", abstract: "ask for a selection with raw Xlib and print what comes back",
            options: [
                selection(default: "_XSELECTION_TEST"),
                .value("targets", "T[,T2,...]", help: "the targets to ask for", default: "UTF8_STRING"),
                whole("time", "T", help: "the timestamp of the request", default: "0"),
                .flag("no-property", help: "ask with no property (the obsolete form)"),
                seconds("deadline", help: "how long to wait", default: "5"),
                .flag("die-after-first-chunk", help: "exit in the middle of an INCR transfer")
            ]),
        Command(
            "host-error-handler", abstract: "read through XSelection in a host that installed its own X error handler",
            options: [selection(default: "_XSELECTION_HOST")]),
        Command(
            "open", abstract: "open a display through XSelection and report how it went",
            options: [.value("display", "D", help: "the display (default: $DISPLAY)")]),
        Command(
            "forge", abstract: "send another client's owner window a forged event (SendEvent), then exit",
            options: [
                .value("event", "E", help: "what to forge", default: "clear", check: .oneOf(["clear", "owner-change", "timestamp"])),
                .value("window", "W", help: "the owner window (decimal or 0x hexadecimal)"),
                selection(default: "_XSELECTION_TEST"),
                whole("count", "N", help: "how many times to send it", default: "1")
            ]),
        Command(
            "broken-pipe", abstract: "write to a pipe nobody reads, as a write to a server that went away is, and report",
            options: [
                .value(
                    "where", "W", help: "where the write happens", default: "plain",
                    check: .oneOf(["plain", "library-thread", "reader-call"])),
                .value("display", "D", help: "with reader-call, the display a reader reads first (default: $DISPLAY)")
            ]),
        Command(
            "time", abstract: "time plain-Xlib reads: the baselines of the benchmark",
            options: [
                .value(
                    "what", "WHAT", help: "what to time", default: "roundtrip",
                    check: .oneOf([
                        "roundtrip", "unowned", "sequential", "pipelined", "unowned-defended", "pipelined-defended"
                    ])),
                prefix(default: "_XSELECTION_TIME_"), count(default: "100"), target,
                whole("warmup", "W", help: "untimed passes", default: "10"),
                whole("reps", "R", help: "timed passes", default: "50")
            ]),
        Command(
            "hostile-server",
            abstract: "take a free display number and answer each connection's set-up as no X server would, until standard input ends",
            options: [
                .value(
                    "reply", "R", help: "the set-up reply to send", default: "many-screens",
                    check: .oneOf(HostileSetUp.allCases.map(\.rawValue)))
            ]),
        Command(
            "grab", abstract: "hold the server (GrabServer) until standard input ends, then exit",
            options: []),
        Command(
            "flood-rate", abstract: "keep a window of requests outstanding and print the rate per interval",
            options: [
                selection(default: "_XSELECTION_TEST"), target,
                whole("window", "K", help: "how many requests may be outstanding", default: "64"),
                whole("interval-ms", "MS", help: "the length of an interval", default: "500"),
                whole("intervals", "N", help: "how many intervals", default: "5")
            ])
    ])

let arguments = helper.parseOrExit()

/// The value of option `name`, which has a default.
func value(_ name: String) -> String { arguments[name]! }
/// The whole number of option `name`, which has a default and was checked.
func number(_ name: String) -> Int { arguments.integer(name)! }

/// Prints one line and flushes, so the test sees it at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

switch arguments.name {
case "own":
    let prefix = value("prefix")
    let count = number("count")
    let start = number("start")
    let target = value("target")
    let bytes: [UInt8]
    if let file = arguments["file"] {
        // Arbitrary bytes, served exactly as given (no {i} substitution).
        guard let contents = FileManager.default.contents(atPath: file) else {
            FileHandle.standardError.write(Data("xselection-helper: cannot read \(file)\n".utf8))
            exit(1)
        }
        bytes = Array(contents)
    } else if let size = arguments.integer("size") {
        bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    } else {
        bytes = Array(value("text").utf8)
    }
    do {
        let owner = try SelectionOwner(options: .init(incrThreshold: arguments.integer("incr-threshold")))
        for index in start..<(start + count) {
            let name = SelectionName(count == 1 && !arguments.isGiven("count") ? prefix : "\(prefix)\(index)")
            let data =
                !arguments.isGiven("text")
                ? bytes
                : Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "{i}", with: String(index)).utf8)
            let payload = SelectionPayload(target: target, type: arguments["type"] ?? target, format: number("format"), bytes: data)
            let result = try owner.claim(name, payloads: [payload], mode: arguments.has("if-free") ? .ifFree : .always)
            if case .claimed = result {} else { say("not-claimed \(name) \(result)") }
        }
        say("ready \(owner.window)")
        // Detached: top-level code runs on the main actor, which the sleep
        // below holds for ever, so an inheriting task would never run and the
        // helper would outlive its server.
        Task.detached {
            for await event in owner.events {
                switch event {
                case .lost(let name, _): say("lost \(name)")
                case .connectionLost:
                    say("connection-lost")
                    exit(3)
                }
            }
        }
        while true { sleep(60) }
    } catch {
        FileHandle.standardError.write(Data("xselection-helper: \(error)\n".utf8))
        exit(1)
    }
case "steal":
    runSteal(
        prefix: value("prefix"), start: number("start"), count: number("count"), milliseconds: number("every-ms"),
        text: value("text"))
case "stall-many":
    runStallMany(prefix: value("prefix"), start: number("start"), count: number("count"))
case "hostile":
    runHostile(
        selection: value("selection"), behavior: value("behavior"), size: number("size"),
        announce: arguments.integer("announce"), chunkSize: number("chunk"), stallAfter: number("stall-after"),
        others: (arguments["others"] ?? "").split(separator: ",").map(String.init), text: value("text"))
case "flood" where arguments.has("unread"):
    runUnreadFlood(
        selection: value("selection"), target: value("target"), seconds: arguments.number("seconds")!,
        windows: number("distinct-windows"))
case "flood":
    runFlood(selection: value("selection"), target: value("target"), seconds: arguments.number("seconds")!, window: number("window"))
case "request" where arguments.has("die-after-first-chunk"):
    runDyingRequest(selection: value("selection"), target: value("targets"))
case "request":
    runRequest(
        selection: value("selection"), targets: value("targets").split(separator: ",").map(String.init),
        time: UInt(number("time")), noProperty: arguments.has("no-property"), deadline: arguments.number("deadline")!)
case "host-error-handler":
    runHostWithErrorHandler(selection: value("selection"))
case "open":
    runOpen(display: arguments["display"])
case "forge":
    guard let text = arguments["window"],
        let window = text.hasPrefix("0x") ? UInt(text.dropFirst(2), radix: 16) : UInt(text)
    else { arguments.fail("forge needs --window, a window id") }
    runForge(event: value("event"), window: window, selection: value("selection"), count: number("count"))
case "broken-pipe":
    runBrokenPipe(where: value("where"), display: arguments["display"])
case "time":
    runTiming(
        what: value("what"), prefix: value("prefix"), count: number("count"), target: value("target"),
        warmup: number("warmup"), reps: number("reps"))
case "grab":
    runGrab()
case "hostile-server":
    runHostileServer(setUp: HostileSetUp(rawValue: value("reply"))!)
case "flood-rate":
    runRateFlood(
        selection: value("selection"), target: value("target"), window: number("window"),
        intervalMilliseconds: number("interval-ms"), intervals: number("intervals"))
default:
    preconditionFailure("the parser let through a mode the helper does not run: \(arguments.name)")
}
