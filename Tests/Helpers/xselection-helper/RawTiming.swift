// Plain-Xlib requestors for the benchmark: the baselines the library's reader
// is compared with, written the way a simple client would write them, and a
// flood of conversions to measure how fast an owner answers.
import CX11
import CXlib
import Foundation

/// Nanoseconds on the monotonic clock.
private func nowNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

private func openOrExit() -> (OpaquePointer, UInt) {
    guard let display = XOpenDisplay(nil) else {
        FileHandle.standardError.write(Data("xselection-helper: cannot open display\n".utf8))
        exit(1)
    }
    let window = XCreateSimpleWindow(display, XDefaultRootWindow(display), 0, 0, 1, 1, 0, 0, 0)
    return (display, window)
}

private func internAll(_ display: OpaquePointer, _ names: [String]) -> [UInt] {
    var cStrings = names.map { strdup($0) }
    defer { cStrings.forEach { free($0) } }
    var atoms = [UInt](repeating: 0, count: names.count)
    _ = cStrings.withUnsafeMutableBufferPointer { names in
        atoms.withUnsafeMutableBufferPointer { XInternAtoms(display, names.baseAddress, Int32(names.count), 0, $0.baseAddress) }
    }
    return atoms
}

/// Times `reps` passes (after `warmup` untimed ones) of one way of talking to the
/// server and prints each pass's duration in nanoseconds, one per line:
/// - roundtrip: one XSync
/// - unowned: `count` conversions issued at once, every SelectionNotify awaited
///   (for selections nobody owns, the server answers itself)
/// - sequential: for each selection in turn, XConvertSelection, wait for its
///   SelectionNotify, XGetWindowProperty: the way the original OpenUDID read its slots
/// - pipelined: every conversion at once, each property read issued as its notify
///   arrives, all replies collected at the end
/// - unowned-defended, pipelined-defended: the same two passes with every request
///   the library's reader makes for its defences (docs/PROTOCOL.md §5), and
///   nothing else: a server timestamp (a zero-length append to a property of a
///   second window, awaited as its PropertyNotify), PropertyChangeMask on the
///   requestor window for the length of the pass, an owner query per selection
///   before any conversion, a DeleteProperty before each conversion, and a time
///   of its own for each conversion (the timestamp plus a random offset). The
///   owner replies are collected, the property events taken and dropped.
/// A pass in which a selection gives no data prints `error ...` and exits 1, so
/// a broken set-up is never timed.
func runTiming(what: String, prefix: String, count: Int, target: String, warmup: Int, reps: Int) -> Never {
    let (display, window) = openOrExit()
    let names = (0..<count).map { "\(prefix)\($0)" }
    let selections = internAll(display, names)
    let targetAtom = internAll(display, [target])[0]
    let property = internAll(display, ["_XSELECTION_HELPER_VALUE"])[0]
    guard let xcb = XGetXCBConnection(display) else { exit(1) }
    XSync(display, 0)

    func awaitNotify() -> XSelectionEvent {
        var event = XEvent()
        while true {
            XNextEvent(display, &event)
            if event.type == SelectionNotify && event.xselection.requestor == window { return event.xselection }
        }
    }

    func fail(_ message: String) -> Never {
        FileHandle.standardOutput.write(Data("error \(message)\n".utf8))
        exit(1)
    }

    let clockWindow = XCreateSimpleWindow(display, XDefaultRootWindow(display), 0, 0, 1, 1, 0, 0, 0)
    XSelectInput(display, clockWindow, PropertyChangeMask)
    let clockProperty = internAll(display, ["_XSELECTION_TIMESTAMP"])[0]
    // The conversions' random offsets, all of a pass's in one read.
    let randomSource = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
    XSync(display, 0)

    /// A server timestamp: the time of the PropertyNotify an empty append makes.
    func serverTime() -> UInt {
        XChangeProperty(display, clockWindow, clockProperty, XA_INTEGER, 8, PropModeAppend, nil, 0)
        XFlush(display)
        var event = XEvent()
        while true {
            XNextEvent(display, &event)
            if event.type == PropertyNotify && event.xproperty.window == clockWindow { return event.xproperty.time }
        }
    }

    /// A defended pass's requests up to the flush; returns the owner queries' cookies.
    func defendedRequests() -> [xcb_get_selection_owner_cookie_t] {
        let time = UInt32(truncatingIfNeeded: serverTime())
        XSelectInput(display, window, PropertyChangeMask)
        let owners = selections.map { xcb_get_selection_owner(xcb, xcb_atom_t($0)) }
        var offsets = [UInt32](repeating: 0, count: selections.count)
        guard offsets.withUnsafeMutableBytes({ read(randomSource, $0.baseAddress, $0.count) }) == offsets.count * 4 else {
            fail("cannot read /dev/urandom")
        }
        for (index, selection) in selections.enumerated() {
            XDeleteProperty(display, window, selection)
            let offset = offsets[index] % (1 << 24) + 1
            XConvertSelection(display, selection, targetAtom, selection, window, UInt(time &+ offset))
        }
        XFlush(display)
        return owners
    }

    /// Waits for every selection's notification and reads each answer's
    /// property (deleting it), the reads pipelined.
    func readAnswers() {
        var cookies: [xcb_get_property_cookie_t] = []
        cookies.reserveCapacity(selections.count)
        for _ in selections {
            let notify = awaitNotify()
            guard notify.property != 0 else { fail("a selection gave no answer") }
            cookies.append(xcb_get_property(xcb, 1, xcb_window_t(window), xcb_atom_t(notify.property), 0, 0, 16384))
        }
        xcb_flush(xcb)
        for cookie in cookies {
            guard let reply = xcb_get_property_reply(xcb, cookie, nil) else { fail("a property read failed") }
            let length = xcb_get_property_value_length(reply)
            free(reply)
            guard length > 0 else { fail("a selection wrote no data") }
        }
    }

    func collectOwners(_ cookies: [xcb_get_selection_owner_cookie_t]) {
        for cookie in cookies {
            guard let reply = xcb_get_selection_owner_reply(xcb, cookie, nil) else { fail("an owner query failed") }
            free(reply)
        }
    }

    func pass() {
        switch what {
        case "roundtrip":
            XSync(display, 0)
        case "unowned":
            for selection in selections {
                XConvertSelection(display, selection, targetAtom, selection, window, UInt(CurrentTime))
            }
            XFlush(display)
            for _ in selections where awaitNotify().property != 0 {
                fail("a selection that should have no owner answered")
            }
        case "sequential":
            for (index, selection) in selections.enumerated() {
                XConvertSelection(display, selection, targetAtom, property, window, UInt(CurrentTime))
                XFlush(display)
                guard awaitNotify().property == property else { fail("\(names[index]) gave no answer") }
                var type: UInt = 0
                var format: Int32 = 0
                var items: UInt = 0
                var after: UInt = 0
                var data: UnsafeMutablePointer<UInt8>?
                let status = XGetWindowProperty(display, window, property, 0, 16384, 1, 0, &type, &format, &items, &after, &data)
                if let data { XFree(data) }
                guard status == Success, items > 0 else { fail("\(names[index]) wrote no data") }
            }
        case "pipelined":
            for selection in selections {
                XConvertSelection(display, selection, targetAtom, selection, window, UInt(CurrentTime))
            }
            XFlush(display)
            readAnswers()
        case "unowned-defended":
            collectOwners(defendedRequests())
            for _ in selections where awaitNotify().property != 0 {
                fail("a selection that should have no owner answered")
            }
            XSelectInput(display, window, 0)
        case "pipelined-defended":
            collectOwners(defendedRequests())
            readAnswers()
            XSelectInput(display, window, 0)
            // The property events of this pass (the owners' writes, the reads'
            // deletes) are taken and dropped, as the library takes them.
            var event = XEvent()
            while XPending(display) > 0 { XNextEvent(display, &event) }
        default:
            FileHandle.standardError.write(Data("xselection-helper: unknown timing \(what)\n".utf8))
            exit(2)
        }
    }

    for _ in 0..<warmup { pass() }
    var lines = ""
    for _ in 0..<reps {
        let start = nowNanoseconds()
        pass()
        lines += "\(nowNanoseconds() - start)\n"
    }
    FileHandle.standardOutput.write(Data(lines.utf8))
    exit(0)
}

/// Keeps `window` conversions of `selection` in flight, each re-issued as soon as
/// its SelectionNotify arrives, and prints every `intervalMilliseconds` a line
/// `interval <answered> <refused> <nanoseconds>`, `intervals` times.
///
/// Nothing is read back: the owner's work (writing the property, sending the
/// notify) is the same either way, and reading would make this process the limit.
func runRateFlood(selection name: String, target: String, window depth: Int, intervalMilliseconds: Int, intervals: Int) -> Never {
    let (display, window) = openOrExit()
    let selection = internAll(display, [name])[0]
    let targetAtom = internAll(display, [target])[0]
    let properties = internAll(display, (0..<depth).map { "_XSELECTION_FLOOD_\($0)" })
    XSync(display, 0)
    for property in properties {
        XConvertSelection(display, selection, targetAtom, property, window, UInt(CurrentTime))
    }
    XFlush(display)
    var answered = 0
    var refused = 0
    var printed = 0
    let interval = UInt64(intervalMilliseconds) * 1_000_000
    var intervalStart = nowNanoseconds()
    var event = XEvent()
    var lines = ""
    while printed < intervals {
        XNextEvent(display, &event)
        guard event.type == SelectionNotify, event.xselection.requestor == window else { continue }
        let notify = event.xselection
        if notify.property == 0 { refused += 1 } else { answered += 1 }
        // A refusal names no property; find which of ours it was by the target's slot.
        let reissue = notify.property != 0 ? notify.property : properties[(answered + refused) % depth]
        XConvertSelection(display, selection, targetAtom, reissue, window, UInt(CurrentTime))
        // Flush in batches: whatever is already queued is handled before the next write.
        if XEventsQueued(display, QueuedAlready) == 0 { XFlush(display) }
        let now = nowNanoseconds()
        if now - intervalStart >= interval {
            lines += "interval \(answered) \(refused) \(now - intervalStart)\n"
            printed += 1
            answered = 0
            refused = 0
            intervalStart = now
        }
    }
    FileHandle.standardOutput.write(Data(lines.utf8))
    exit(0)
}
