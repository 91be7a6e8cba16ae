// A separate process that owns selections for the tests.
//
//   xselection-helper own --prefix P --count N [--start K] --target T [--type TY] [--format 8|16|32]
//                         (--text S | --file PATH | --size BYTES) [--incr-threshold BYTES] [--if-free]
//   xselection-helper hostile --selection NAME --behavior B [--size BYTES] [--announce BYTES]
//                             [--chunk BYTES] [--stall-after BYTES]
//   xselection-helper steal --prefix P --start K --count N [--every-ms MS] --text S
//   xselection-helper stall-many --prefix P --start K --count N
//   xselection-helper flood --selection NAME [--target T] [--seconds S] [--window N]
//   xselection-helper flood --unread --selection NAME [--target T] [--seconds S] [--distinct-windows N]
//   xselection-helper request --selection NAME --targets T[,T2,...] [--time T] [--no-property] [--deadline SECONDS]
//   xselection-helper request --selection NAME --targets T --die-after-first-chunk
//   xselection-helper host-error-handler --selection NAME
//   xselection-helper open [--display D]
//   xselection-helper time --what roundtrip|unowned|sequential|pipelined --prefix P --count N
//                          [--target T] [--warmup W] [--reps R]
//   xselection-helper flood-rate --selection NAME [--target T] [--window K] [--interval-ms MS] [--intervals N]
//
// As an owner it prints "ready <window> <client>" once it serves, "lost <name>" when
// a selection is taken from it, and runs until killed. `time` and `flood-rate` are the
// plain-Xlib baselines of the benchmark; they print their figures and exit.
import Foundation
import XSelection

let arguments = Array(CommandLine.arguments.dropFirst())
guard let mode = arguments.first else {
    FileHandle.standardError.write(Data("usage: xselection-helper own|hostile|request|host-error-handler|open|time|flood|flood-rate ...\n".utf8))
    exit(2)
}

func option(_ name: String) -> String? {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}


/// Prints one line and flushes, so the test sees it at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

switch mode {
case "own":
    let prefix = option("--prefix") ?? "_XSELECTION_TEST"
    let count = Int(option("--count") ?? "1") ?? 1
    let start = Int(option("--start") ?? "0") ?? 0
    let target = option("--target") ?? "UTF8_STRING"
    let type = option("--type") ?? target
    let format = Int(option("--format") ?? "8") ?? 8
    let bytes: [UInt8]
    if let file = option("--file") {
        // Arbitrary bytes, served exactly as given (no {i} substitution).
        guard let contents = FileManager.default.contents(atPath: file) else {
            FileHandle.standardError.write(Data("xselection-helper: cannot read \(file)\n".utf8))
            exit(1)
        }
        bytes = Array(contents)
    } else if let size = option("--size").flatMap(Int.init) {
        bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    } else {
        bytes = Array((option("--text") ?? "hello").utf8)
    }
    let threshold = option("--incr-threshold").flatMap(Int.init)
    do {
        let owner = try SelectionOwner(options: .init(incrThreshold: threshold))
        for index in start..<(start + count) {
            let name = SelectionName(count == 1 && option("--count") == nil ? prefix : "\(prefix)\(index)")
            let data = option("--text") == nil ? bytes
                : Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "{i}", with: String(index)).utf8)
            let result = try owner.claim(name, payloads: [SelectionPayload(target: target, type: type, format: format, bytes: data)],
                                         mode: arguments.contains("--if-free") ? .ifFree : .always)
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
                case .connectionLost: say("connection-lost"); exit(3)
                }
            }
        }
        while true { sleep(60) }
    } catch {
        FileHandle.standardError.write(Data("xselection-helper: \(error)\n".utf8))
        exit(1)
    }
case "steal":
    runSteal(prefix: option("--prefix") ?? "_XSELECTION_TEST", start: Int(option("--start") ?? "0") ?? 0,
             count: Int(option("--count") ?? "1") ?? 1, milliseconds: Int(option("--every-ms") ?? "50") ?? 50,
             text: option("--text") ?? "hello")
case "stall-many":
    runStallMany(prefix: option("--prefix") ?? "_XSELECTION_TEST", start: Int(option("--start") ?? "0") ?? 0,
                 count: Int(option("--count") ?? "1") ?? 1)
case "hostile":
    runHostile(selection: option("--selection") ?? "_XSELECTION_HOSTILE", behavior: option("--behavior") ?? "silent",
               size: Int(option("--size") ?? "") ?? 10 * 1024 * 1024, announce: option("--announce").flatMap(Int.init),
               chunkSize: Int(option("--chunk") ?? "") ?? 4096, stallAfter: Int(option("--stall-after") ?? "") ?? 0)
case "flood" where arguments.contains("--unread"):
    runUnreadFlood(selection: option("--selection") ?? "_XSELECTION_TEST", target: option("--target") ?? "UTF8_STRING",
                   seconds: Double(option("--seconds") ?? "") ?? 3, windows: Int(option("--distinct-windows") ?? "") ?? 1)
case "flood":
    runFlood(selection: option("--selection") ?? "_XSELECTION_TEST", target: option("--target") ?? "UTF8_STRING",
             seconds: Double(option("--seconds") ?? "") ?? 3, window: Int(option("--window") ?? "") ?? 2000)
case "request" where arguments.contains("--die-after-first-chunk"):
    runDyingRequest(selection: option("--selection") ?? "_XSELECTION_TEST", target: option("--targets") ?? "UTF8_STRING")
case "request":
    runRequest(selection: option("--selection") ?? "_XSELECTION_TEST", targets: (option("--targets") ?? "UTF8_STRING").split(separator: ",").map(String.init),
               time: UInt(option("--time") ?? "0") ?? 0, noProperty: arguments.contains("--no-property"),
               deadline: Double(option("--deadline") ?? "") ?? 5)
case "host-error-handler":
    runHostWithErrorHandler(selection: option("--selection") ?? "_XSELECTION_HOST")
case "open":
    runOpen(display: option("--display"))
case "time":
    runTiming(what: option("--what") ?? "roundtrip", prefix: option("--prefix") ?? "_XSELECTION_TIME_",
              count: Int(option("--count") ?? "100") ?? 100, target: option("--target") ?? "UTF8_STRING",
              warmup: Int(option("--warmup") ?? "10") ?? 10, reps: Int(option("--reps") ?? "50") ?? 50)
case "flood-rate":
    runRateFlood(selection: option("--selection") ?? "_XSELECTION_TEST", target: option("--target") ?? "UTF8_STRING",
             window: Int(option("--window") ?? "64") ?? 64, intervalMilliseconds: Int(option("--interval-ms") ?? "500") ?? 500,
             intervals: Int(option("--intervals") ?? "5") ?? 5)
default:
    FileHandle.standardError.write(Data("xselection-helper: unknown mode \(mode)\n".utf8))
    exit(2)
}
