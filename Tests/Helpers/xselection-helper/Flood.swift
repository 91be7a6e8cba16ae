// A requestor that floods a selection's owner with conversion requests, to
// show that an owner under such load keeps serving its host and stays small.
import CX11
import Foundation

/// Sends `SelectionRequest`s for `selection` as fast as the server takes them,
/// with up to `window` unanswered at any time, for `seconds`; then waits up to
/// two seconds for the last answers.
///
/// Prints `ready 0x<window>` before it starts and, at the end,
/// `flooded sent N answered A refused R seconds S`.
func runFlood(selection name: String, target: String, seconds: Double, window limit: Int) -> Never {
    guard let display = XOpenDisplay(nil) else {
        FileHandle.standardError.write(Data("xselection-helper: cannot open display\n".utf8))
        exit(1)
    }
    let window = XCreateSimpleWindow(display, XDefaultRootWindow(display), 0, 0, 1, 1, 0, 0, 0)
    let selection = XInternAtom(display, name, 0)
    let targetAtom = XInternAtom(display, target, 0)
    let property = XInternAtom(display, "_XSELECTION_HELPER_FLOOD", 0)
    XSync(display, 0)
    say("ready 0x\(String(window, radix: 16))")

    var sent = 0, answered = 0, refused = 0
    let started = Date()
    let end = started.addingTimeInterval(seconds)
    var event = XEvent()
    var descriptor = pollfd(fd: XConnectionNumber(display), events: Int16(POLLIN), revents: 0)

    func drain() {
        while XPending(display) > 0 {
            XNextEvent(display, &event)
            guard event.type == SelectionNotify else { continue }
            if event.xselection.property == 0 { refused += 1 } else { answered += 1 }
        }
    }

    while Date() < end {
        var burst = 0
        while sent - answered - refused < limit && burst < 256 {
            XConvertSelection(display, selection, targetAtom, property, window, UInt(CurrentTime))
            sent += 1
            burst += 1
        }
        XFlush(display)
        drain()
        if burst == 0 { _ = poll(&descriptor, 1, 10) }
    }
    let drainEnd = Date().addingTimeInterval(2)
    while sent > answered + refused && Date() < drainEnd {
        drain()
        _ = poll(&descriptor, 1, 10)
    }
    say("flooded sent \(sent) answered \(answered) refused \(refused) seconds \(String(format: "%.1f", Date().timeIntervalSince(started)))")
    exit(0)
}
