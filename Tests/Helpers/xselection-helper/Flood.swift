// A requestor that floods a selection's owner with conversion requests, to
// show that an owner under such load keeps serving its host and stays small.
import CXlib
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

    var sent = 0
    var answered = 0
    var refused = 0
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

/// Sends `SelectionRequest`s for `selection` for `seconds` and never reads
/// anything the server sends back: the answers pile up in the server's output
/// buffer for this client, and the owner is left alone with the flood.
///
/// Once its window and atoms exist it writes raw ConvertSelection requests to
/// the socket itself, so that not even libxcb (which reads while it waits to
/// write) takes anything in. With `--distinct-windows N` the requests name N
/// windows of this client in turn, as a flooder hiding behind many requestors
/// would. Prints `ready 0x<window>` before it starts and
/// `flooded sent N seconds S` at the end, then exits.
func runUnreadFlood(selection name: String, target: String, seconds: Double, windows count: Int) -> Never {
    guard let display = XOpenDisplay(nil) else {
        FileHandle.standardError.write(Data("xselection-helper: cannot open display\n".utf8))
        exit(1)
    }
    let root = XDefaultRootWindow(display)
    let windows = (0..<max(1, count)).map { _ in XCreateSimpleWindow(display, root, 0, 0, 1, 1, 0, 0, 0) }
    let selection = XInternAtom(display, name, 0)
    let targetAtom = XInternAtom(display, target, 0)
    let property = XInternAtom(display, "_XSELECTION_HELPER_FLOOD", 0)
    XSync(display, 0)
    say("ready 0x\(String(windows[0], radix: 16))")

    // ConvertSelection: opcode 24, length 6 words, then requestor, selection,
    // target, property and time (CurrentTime), in this client's byte order.
    var requests: [UInt32] = []
    let perWrite = 1024
    for index in 0..<perWrite {
        let window = UInt32(truncatingIfNeeded: windows[index % windows.count])
        requests += [
            UInt32(24) | UInt32(6) << 16, window, UInt32(truncatingIfNeeded: selection),
            UInt32(truncatingIfNeeded: targetAtom), UInt32(truncatingIfNeeded: property), 0
        ]
    }
    let fd = XConnectionNumber(display)
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
    let started = Date()
    let end = started.addingTimeInterval(seconds)
    var sentBytes = 0
    let total = requests.count * 4
    requests.withUnsafeBytes { buffer in
        var offset = 0
        while Date() < end {
            let written = write(fd, buffer.baseAddress! + offset, total - offset)
            if written > 0 {
                sentBytes += written
                offset = (offset + written) % total
            } else if written < 0 && errno != EAGAIN && errno != EINTR {
                break
            } else {
                _ = poll(&descriptor, 1, 10)
            }
        }
    }
    say("flooded sent \(sentBytes / 24) seconds \(String(format: "%.1f", Date().timeIntervalSince(started)))")
    exit(0)
}
