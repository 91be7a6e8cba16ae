// Attacks on the vote from the display alone, for the hostile-peer tests.
import CXlib
import Foundation
import XSelection

/// Takes selections `prefix<start>` … `prefix<start+count-1>` from whoever
/// holds them, every `milliseconds`, and serves `text` in them: a client that
/// keeps stealing slots. Prints "ready" after the first round, runs until killed.
func runSteal(prefix: String, start: Int, count: Int, milliseconds: Int, text: String) -> Never {
    do {
        let owner = try SelectionOwner()
        let payloads = ["_OPENUDID_RECORD", "UTF8_STRING"].map {
            SelectionPayload(target: $0, type: $0, bytes: Array(text.replacingOccurrences(of: "{i}", with: "0").utf8))
        }
        var announced = false
        while true {
            for index in start..<(start + count) {
                try owner.claim(SelectionName("\(prefix)\(index)"), payloads: payloads, mode: .always)
            }
            if !announced {
                say("ready \(owner.window)")
                announced = true
            }
            usleep(useconds_t(milliseconds * 1000))
        }
    } catch {
        FileHandle.standardError.write(Data("xselection-helper: \(error)\n".utf8))
        exit(1)
    }
}

/// Opens `count` connections, each a separate X client that owns one selection
/// `prefix<start+i>` and answers every request with an INCR transfer it never
/// continues. Prints "ready" once all own their selection, runs until killed.
func runStallMany(prefix: String, start: Int, count: Int) -> Never {
    var clients: [(display: OpaquePointer, window: Window)] = []
    for index in start..<(start + count) {
        guard let display = XOpenDisplay(nil) else {
            FileHandle.standardError.write(Data("xselection-helper: cannot open display for client \(index)\n".utf8))
            exit(1)
        }
        let window = XCreateSimpleWindow(display, XDefaultRootWindow(display), 0, 0, 1, 1, 0, 0, 0)
        XSetSelectionOwner(display, XInternAtom(display, "\(prefix)\(index)", 0), window, UInt(CurrentTime))
        XSync(display, 0)
        clients.append((display, window))
    }
    say("ready 0x\(String(clients.first?.window ?? 0, radix: 16))")
    var descriptors = clients.map { pollfd(fd: XConnectionNumber($0.display), events: Int16(POLLIN), revents: 0) }
    var event = XEvent()
    while true {
        _ = poll(&descriptors, nfds_t(descriptors.count), 1000)
        for (display, _) in clients {
            while XPending(display) > 0 {
                XNextEvent(display, &event)
                guard event.type == SelectionRequest else { continue }
                let request = event.xselectionrequest
                let property = request.property == 0 ? request.target : request.property
                var announced = [UInt(4000)]
                announced.withUnsafeMutableBytes { raw in
                    _ = XChangeProperty(
                        display, request.requestor, property, XInternAtom(display, "INCR", 0), 32,
                        PropModeReplace, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 1)
                }
                var reply = XEvent()
                reply.xselection = XSelectionEvent(
                    type: SelectionNotify, serial: 0, send_event: 1, display: display,
                    requestor: request.requestor, selection: request.selection,
                    target: request.target, property: property, time: request.time)
                XSendEvent(display, request.requestor, 0, 0, &reply)
                XFlush(display)
            }
        }
    }
}

/// Holds the server (GrabServer) until standard input ends: no other client
/// is served meanwhile. Prints "ready 0x0" once the grab holds, and exits
/// after letting go. The test that started it decides when, by closing the
/// pipe; if that process goes, the pipe closes with it.
func runGrab() -> Never {
    guard let display = XOpenDisplay(nil) else {
        FileHandle.standardError.write(Data("xselection-helper: cannot open display\n".utf8))
        exit(1)
    }
    XGrabServer(display)
    XSync(display, 0)
    say("ready 0x0")
    var buffer = [UInt8](repeating: 0, count: 64)
    while true {
        let count = read(0, &buffer, buffer.count)
        if count > 0 || (count < 0 && errno == EINTR) { continue }
        break
    }
    XUngrabServer(display)
    XSync(display, 0)
    XCloseDisplay(display)
    exit(0)
}

/// Sends `window` (another client's owner window) a forged event, as any
/// client may with SendEvent: `clear`, a SelectionClear saying `selection`
/// was taken from it; `owner-change`, an XFixes notification saying
/// `selection` has a new owner. Prints "sent" once the server has it.
func runForge(event kind: String, window: UInt, selection: String, count: Int) -> Never {
    guard let display = XOpenDisplay(nil) else {
        FileHandle.standardError.write(Data("xselection-helper: cannot open display\n".utf8))
        exit(1)
    }
    let atom = XInternAtom(display, selection, 0)
    var event = XEvent()
    switch kind {
    case "clear":
        event.xselectionclear = XSelectionClearEvent(
            type: SelectionClear, serial: 0, send_event: 1, display: display, window: Window(window), selection: atom,
            time: Time(CurrentTime))
    case "timestamp":
        // The notice an owner takes its claim's time from, with a time far ahead
        // of the server's: a claim made with it would be ignored by the server.
        event.xproperty = XPropertyEvent(
            type: PropertyNotify, serial: 0, send_event: 1, display: display, window: Window(window),
            atom: XInternAtom(display, "_XSELECTION_TIMESTAMP", 0), time: Time(0xF000_0000), state: PropertyNewValue)
    default:
        var eventBase: Int32 = 0
        var errorBase: Int32 = 0
        var major: Int32 = 0
        var minor: Int32 = 0
        guard XFixesQueryExtension(display, &eventBase, &errorBase) != 0 else {
            FileHandle.standardError.write(Data("xselection-helper: no XFixes\n".utf8))
            exit(1)
        }
        XFixesQueryVersion(display, &major, &minor)
        var notify = XFixesSelectionNotifyEvent(
            type: eventBase + XFixesSelectionNotify, serial: 0, send_event: 1, display: display,
            window: XDefaultRootWindow(display), subtype: XFixesSetSelectionOwnerNotify, owner: Window(window) + 1,
            selection: atom, timestamp: Time(CurrentTime), selection_timestamp: Time(CurrentTime))
        withUnsafeMutableBytes(of: &event) { target in
            withUnsafeBytes(of: &notify) { target.copyMemory(from: $0) }
        }
    }
    for sent in 0..<count {
        XSendEvent(display, Window(window), 0, 0, &event)
        if sent % 64 == 63 { XSync(display, 0) }
    }
    XSync(display, 0)
    say("sent")
    exit(0)
}
