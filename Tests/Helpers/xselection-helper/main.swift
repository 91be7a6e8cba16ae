// A separate process that owns selections for the tests.
//
//   xselection-helper own --prefix P --count N [--start K] --target T [--type TY]
//                         (--text S | --size BYTES) [--incr-threshold BYTES] [--if-free]
//   xselection-helper hostile --selection NAME --behavior B [--size BYTES]
//   xselection-helper request --selection NAME --targets T[,T2,...] [--time T] [--no-property]
//   xselection-helper time --what roundtrip|unowned|sequential|pipelined --prefix P --count N
//                          [--target T] [--warmup W] [--reps R]
//   xselection-helper flood --selection NAME [--target T] [--window K] [--interval-ms MS] [--intervals N]
//
// As an owner it prints "ready <window> <client>" once it serves, "lost <name>" when
// a selection is taken from it, and runs until killed. `time` and `flood` are the
// plain-Xlib baselines of the benchmark; they print their figures and exit.
import Foundation
import XSelection

let arguments = Array(CommandLine.arguments.dropFirst())
guard let mode = arguments.first else {
    FileHandle.standardError.write(Data("usage: xselection-helper own|hostile|request|time|flood ...\n".utf8))
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
    let bytes: [UInt8]
    if let size = option("--size").flatMap(Int.init) {
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
            let result = try owner.claim(name, payloads: [SelectionPayload(target: target, type: type, bytes: data)],
                                         mode: arguments.contains("--if-free") ? .ifFree : .always)
            if case .claimed = result {} else { say("not-claimed \(name) \(result)") }
        }
        say("ready \(owner.window)")
        Task {
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
case "hostile":
    runHostile(selection: option("--selection") ?? "_XSELECTION_HOSTILE", behavior: option("--behavior") ?? "silent",
               size: Int(option("--size") ?? "") ?? 10 * 1024 * 1024)
case "request":
    runRequest(selection: option("--selection") ?? "_XSELECTION_TEST", targets: (option("--targets") ?? "UTF8_STRING").split(separator: ",").map(String.init),
               time: UInt(option("--time") ?? "0") ?? 0, noProperty: arguments.contains("--no-property"))
case "time":
    runTiming(what: option("--what") ?? "roundtrip", prefix: option("--prefix") ?? "_XSELECTION_TIME_",
              count: Int(option("--count") ?? "100") ?? 100, target: option("--target") ?? "UTF8_STRING",
              warmup: Int(option("--warmup") ?? "10") ?? 10, reps: Int(option("--reps") ?? "50") ?? 50)
case "flood":
    runFlood(selection: option("--selection") ?? "_XSELECTION_TEST", target: option("--target") ?? "UTF8_STRING",
             window: Int(option("--window") ?? "64") ?? 64, intervalMilliseconds: Int(option("--interval-ms") ?? "500") ?? 500,
             intervals: Int(option("--intervals") ?? "5") ?? 5)
default:
    FileHandle.standardError.write(Data("xselection-helper: unknown mode \(mode)\n".utf8))
    exit(2)
}
