// Deliberately broken selection owners, written against raw Xlib so they can
// break the protocol in ways a correct library never would.
import CXlib
import Foundation

/// Owns `selection` and misbehaves as `behavior` says:
/// - silent: never answers any request
/// - wrong-property: answers into a property other than the one asked for
/// - no-property: reports success but writes nothing
/// - bad-format: writes format-16 data where 8-bit text is expected... announced as 24-bit
/// - garbage: answers with random bytes
/// - stall-incr: starts an INCR transfer, sends chunks until `stallAfter` bytes are out, then goes quiet
/// - die-mid-incr: starts an INCR transfer, sends one chunk, then exits
/// - huge-incr: streams an INCR transfer of `size` bytes as fast as the reader takes it
/// - hide-others: answers with text, but first sends the requestor forged XFixes
///   notifications (SendEvent) that each of `others` changed owner, so that a
///   reader that believed them would drop those selections' answers
/// - answer-for-others: answers with `answer`, but first answers for each of
///   `others` too, into the property the requestor reads it from, with a
///   SelectionNotify carrying the time of the request it got, so that a reader
///   that believed them would count its answer in those owners' names
/// - spoil-others: answers with `answer`, but first appends zero bytes to the
///   property each of `others` is answered into, and from then on watches the
///   requestor's window and appends zero bytes whenever one of those
///   properties is deleted (before a conversion) or written by someone else,
///   so that each honest answer counts as written twice
///
/// INCR transfers announce `announce` bytes (default: `size`, so a lie is possible)
/// and send chunks of `chunkSize` bytes.
func runHostile(
    selection name: String, behavior: String, size: Int, announce: Int? = nil, chunkSize: Int = 4096,
    stallAfter: Int = 0, others: [String] = [], text answer: String = "forged"
) -> Never {
    guard let display = XOpenDisplay(nil) else {
        FileHandle.standardError.write(Data("xselection-helper: cannot open display\n".utf8))
        exit(1)
    }
    let root = XDefaultRootWindow(display)
    // It writes to readers' windows that may be gone by then (a reader gives up at
    // its deadline, on a loaded machine before the answer comes, and closes): a
    // BadWindow must not end it, as libX11's default handler would.
    XSetErrorHandler { _, _ in 0 }
    let window = XCreateSimpleWindow(display, root, 0, 0, 1, 1, 0, 0, 0)
    XSelectInput(display, window, PropertyChangeMask)
    let selection = XInternAtom(display, name, 0)
    let incr = XInternAtom(display, "INCR", 0)
    let utf8 = XInternAtom(display, "UTF8_STRING", 0)
    var fixesEventBase: Int32 = 0
    var fixesErrorBase: Int32 = 0
    if XFixesQueryExtension(display, &fixesEventBase, &fixesErrorBase) != 0 {
        var major: Int32 = 0
        var minor: Int32 = 0
        XFixesQueryVersion(display, &major, &minor)
    }
    let otherAtoms = others.map { XInternAtom(display, $0, 0) }
    XSetSelectionOwner(display, selection, window, UInt(CurrentTime))
    XSync(display, 0)
    say("ready 0x\(String(window, radix: 16))")

    var transfer: (requestor: UInt, property: UInt, sent: Int)?
    // spoil-others: the requestor windows watched, and the writes of our own
    // still to come back as events there, which are not answered again.
    var spoiling: Set<UInt> = []
    var ownWrites: [String: Int] = [:]
    // An append must name the type the property has (the target asked for),
    // or the server refuses it.
    var spoilType = utf8
    func spoil(_ requestor: UInt, _ atom: UInt) {
        XChangeProperty(display, requestor, atom, spoilType, 8, PropModeAppend, chunk, 0)
        ownWrites["\(requestor) \(atom)", default: 0] += 1
    }
    let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: max(1, chunkSize))
    var event = XEvent()
    while true {
        XNextEvent(display, &event)
        if event.type == PropertyNotify, behavior == "spoil-others", spoiling.contains(event.xproperty.window),
            otherAtoms.contains(event.xproperty.atom)
        {
            let key = "\(event.xproperty.window) \(event.xproperty.atom)"
            if event.xproperty.state == PropertyDelete {
                // A reader clears the property just before it converts again:
                // a write now lands after that conversion, ahead of the answer.
                spoil(event.xproperty.window, event.xproperty.atom)
                XFlush(display)
            } else if let pending = ownWrites[key], pending > 0 {
                ownWrites[key] = pending - 1
            } else {
                spoil(event.xproperty.window, event.xproperty.atom)
                XFlush(display)
            }
            continue
        }
        if event.type == PropertyNotify, let current = transfer, event.xproperty.window == current.requestor,
            event.xproperty.atom == current.property, event.xproperty.state == PropertyDelete
        {
            switch behavior {
            case "stall-incr" where current.sent >= stallAfter:
                continue
            case "die-mid-incr" where current.sent > 0:
                exit(0)
            default:
                let remaining = size - current.sent
                let count = max(0, min(chunk.count, remaining))
                XChangeProperty(display, current.requestor, current.property, utf8, 8, PropModeReplace, chunk, Int32(count))
                transfer = count == 0 ? nil : (current.requestor, current.property, current.sent + count)
                XFlush(display)
            }
            continue
        }
        guard event.type == SelectionRequest else { continue }
        let request = event.xselectionrequest
        if behavior == "silent" { continue }
        var property = request.property == 0 ? request.target : request.property
        switch behavior {
        case "wrong-property":
            property = XInternAtom(display, "_XSELECTION_SOMEWHERE_ELSE", 0)
            XChangeProperty(display, request.requestor, property, utf8, 8, PropModeReplace, chunk, 10)
        case "no-property":
            break
        case "bad-format":
            var items: [UInt16] = [1, 2, 3]
            items.withUnsafeMutableBytes { raw in
                _ = XChangeProperty(
                    display, request.requestor, property, utf8, 16, PropModeReplace,
                    raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 3)
            }
        case "garbage":
            let junk = (0..<200).map { _ in UInt8.random(in: 0...255) }
            XChangeProperty(display, request.requestor, property, utf8, 8, PropModeReplace, junk, Int32(junk.count))
        case "hide-others":
            for atom in otherAtoms {
                var notify = XFixesSelectionNotifyEvent(
                    type: fixesEventBase + XFixesSelectionNotify, serial: 0, send_event: 1, display: display, window: root,
                    subtype: XFixesSetSelectionOwnerNotify, owner: window, selection: atom, timestamp: request.time,
                    selection_timestamp: request.time)
                var forged = XEvent()
                withUnsafeMutableBytes(of: &forged) { target in
                    withUnsafeBytes(of: &notify) { target.copyMemory(from: $0) }
                }
                XSendEvent(display, request.requestor, 0, 0, &forged)
            }
            // Once the server has them, say so: the test lets the honest owners answer only then.
            XSync(display, 0)
            say("forged")
            let text = Array("hidden".utf8)
            XChangeProperty(display, request.requestor, property, utf8, 8, PropModeReplace, text, Int32(text.count))
        case "spoil-others":
            spoilType = request.target
            // A window id comes back when the server gives a gone client's
            // resource range to a new one: select on every request.
            spoiling.insert(request.requestor)
            XSelectInput(display, request.requestor, PropertyChangeMask)
            say("spoiling 0x\(String(request.requestor, radix: 16))")
            for atom in otherAtoms { spoil(request.requestor, atom) }
            let text = Array(answer.utf8)
            XChangeProperty(display, request.requestor, property, utf8, 8, PropModeReplace, text, Int32(text.count))
        case "answer-for-others":
            // A reader converts each selection into a property named after it.
            let text = Array(answer.utf8)
            for atom in otherAtoms {
                XChangeProperty(display, request.requestor, atom, utf8, 8, PropModeReplace, text, Int32(text.count))
                var forged = XEvent()
                forged.xselection = XSelectionEvent(
                    type: SelectionNotify, serial: 0, send_event: 1, display: display, requestor: request.requestor,
                    selection: atom, target: request.target, property: atom, time: request.time)
                XSendEvent(display, request.requestor, 0, 0, &forged)
            }
            XSync(display, 0)
            say("forged")
            XChangeProperty(display, request.requestor, property, utf8, 8, PropModeReplace, text, Int32(text.count))
        default: // the INCR behaviours
            XSelectInput(display, request.requestor, PropertyChangeMask)
            var announced = [UInt(announce ?? size)]
            announced.withUnsafeMutableBytes { raw in
                _ = XChangeProperty(
                    display, request.requestor, property, incr, 32, PropModeReplace,
                    raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 1)
            }
            transfer = (request.requestor, property, 0)
        }
        var reply = XEvent()
        reply.xselection = XSelectionEvent(
            type: SelectionNotify, serial: 0, send_event: 1, display: display,
            requestor: request.requestor, selection: request.selection, target: request.target,
            property: property, time: request.time)
        XSendEvent(display, request.requestor, 0, 0, &reply)
        XFlush(display)
    }
}

/// A raw requestor, for checking how an owner answers requests that
/// SelectionReader never makes: a chosen timestamp, no property, MULTIPLE.
///
/// Prints one line per answer: `ok TARGET TYPE FORMAT TEXT` or `refused TARGET`.
func runRequest(selection name: String, targets: [String], time: UInt, noProperty: Bool, deadline seconds: Double = 5) -> Never {
    guard let display = XOpenDisplay(nil) else {
        FileHandle.standardError.write(Data("xselection-helper: cannot open display\n".utf8))
        exit(1)
    }
    let window = XCreateSimpleWindow(display, XDefaultRootWindow(display), 0, 0, 1, 1, 0, 0, 0)
    let selection = XInternAtom(display, name, 0)
    let multiple = XInternAtom(display, "MULTIPLE", 0)
    let atomPair = XInternAtom(display, "ATOM_PAIR", 0)
    let resultProperty = XInternAtom(display, "_XSELECTION_HELPER_RESULT", 0)
    let targetAtoms = targets.map { XInternAtom(display, $0, 0) }

    func readProperty(_ property: UInt) -> (type: UInt, format: Int32, bytes: [UInt8], items: [UInt])? {
        var type: UInt = 0
        var format: Int32 = 0
        var count: UInt = 0
        var after: UInt = 0
        var data: UnsafeMutablePointer<UInt8>?
        guard XGetWindowProperty(display, window, property, 0, 1 << 20, 1, 0, &type, &format, &count, &after, &data) == Success,
            type != 0, let data
        else { return nil }
        defer { XFree(data) }
        if format == 32 {
            let items = Array(UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: UInt.self), count: Int(count)))
            return (type, format, [], items)
        }
        return (type, format, Array(UnsafeBufferPointer(start: data, count: Int(count) * Int(format / 8))), [])
    }

    func atomName(_ atom: UInt) -> String {
        guard atom != 0, let raw = XGetAtomName(display, atom) else { return "None" }
        defer { XFree(raw) }
        return String(cString: raw)
    }

    func describe(_ target: String, _ value: (type: UInt, format: Int32, bytes: [UInt8], items: [UInt])) -> String {
        let text =
            value.format == 32
            ? value.items.map { atomName($0) == "None" ? String($0) : atomName($0) }.joined(separator: ",")
            : String(decoding: value.bytes, as: UTF8.self)
        return "ok \(target) \(atomName(value.type)) \(value.format) \(text)"
    }

    let multipleRequest = targets.count > 1
    let target = multipleRequest ? multiple : targetAtoms[0]
    if multipleRequest {
        var pairs: [UInt] = []
        for (index, atom) in targetAtoms.enumerated() {
            pairs += [atom, XInternAtom(display, "_XSELECTION_HELPER_P\(index)", 0)]
        }
        let count = Int32(pairs.count)
        pairs.withUnsafeMutableBytes { raw in
            _ = XChangeProperty(
                display, window, resultProperty, atomPair, 32, PropModeReplace,
                raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count)
        }
    }
    XConvertSelection(display, selection, target, noProperty ? 0 : resultProperty, window, time)
    XFlush(display)
    var event = XEvent()
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if XCheckTypedWindowEvent(display, window, SelectionNotify, &event) != 0 {
            let notify = event.xselection
            guard notify.property != 0 else {
                say("refused \(targets.joined(separator: ","))")
                exit(0)
            }
            if multipleRequest {
                guard let pairs = readProperty(notify.property) else {
                    say("malformed")
                    exit(0)
                }
                for index in stride(from: 0, to: pairs.items.count - 1, by: 2) {
                    let name = atomName(pairs.items[index])
                    if pairs.items[index + 1] == 0 {
                        say("refused \(name)")
                    } else if let value = readProperty(pairs.items[index + 1]) {
                        say(describe(name, value))
                    } else {
                        say("missing \(name)")
                    }
                }
            } else if let value = readProperty(notify.property) {
                say("property \(atomName(notify.property))")
                say(describe(targets[0], value))
            } else {
                say("missing \(targets[0])")
            }
            exit(0)
        }
        usleep(2_000)
    }
    say("timeout")
    exit(0)
}

/// A requestor that dies in the middle of an INCR transfer: it takes the first
/// chunk, then deletes the property (which asks the owner for the next chunk)
/// and destroys its window before the owner can act, so the owner's next
/// write hits a window that no longer exists.
///
/// Prints `incr` when the transfer starts, `first-chunk BYTES` and then
/// `died` once the window is gone, or `not-incr`/`timeout` if it never got there.
func runDyingRequest(selection name: String, target: String) -> Never {
    guard let display = XOpenDisplay(nil) else {
        FileHandle.standardError.write(Data("xselection-helper: cannot open display\n".utf8))
        exit(1)
    }
    let window = XCreateSimpleWindow(display, XDefaultRootWindow(display), 0, 0, 1, 1, 0, 0, 0)
    XSelectInput(display, window, PropertyChangeMask)
    let selection = XInternAtom(display, name, 0)
    let targetAtom = XInternAtom(display, target, 0)
    let incr = XInternAtom(display, "INCR", 0)
    let property = XInternAtom(display, "_XSELECTION_HELPER_DYING", 0)

    /// Reads and deletes the property; returns its type.
    func take() -> UInt? {
        var type: UInt = 0
        var format: Int32 = 0
        var count: UInt = 0
        var after: UInt = 0
        var data: UnsafeMutablePointer<UInt8>?
        guard XGetWindowProperty(display, window, property, 0, 1 << 20, 1, 0, &type, &format, &count, &after, &data) == Success else {
            return nil
        }
        if let data { XFree(data) }
        return type
    }

    XConvertSelection(display, selection, targetAtom, property, window, UInt(CurrentTime))
    XFlush(display)
    var event = XEvent()
    var started = false
    let deadline = Date().addingTimeInterval(5)
    while Date() < deadline {
        if !started, XCheckTypedWindowEvent(display, window, SelectionNotify, &event) != 0 {
            // Reading with delete tells the owner to send the first chunk.
            guard event.xselection.property != 0, take() == incr else {
                say("not-incr")
                exit(0)
            }
            say("incr")
            started = true
            continue
        }
        if started, XCheckTypedWindowEvent(display, window, PropertyNotify, &event) != 0 {
            guard event.xproperty.atom == property, event.xproperty.state == PropertyNewValue else { continue }
            var type: UInt = 0
            var format: Int32 = 0
            var count: UInt = 0
            var after: UInt = 0
            var data: UnsafeMutablePointer<UInt8>?
            _ = XGetWindowProperty(display, window, property, 0, 1 << 20, 0, 0, &type, &format, &count, &after, &data)
            if let data { XFree(data) }
            // The notice of the INCR property itself may still be queued; wait
            // for one that finds a chunk there.
            guard type != 0, type != incr, count > 0 else { continue }
            say("first-chunk \(count)")
            // Under a grab the server runs no other client's requests, so the
            // owner's answer to the delete can only reach the destroyed window.
            XGrabServer(display)
            XDeleteProperty(display, window, property)
            XDestroyWindow(display, window)
            XUngrabServer(display)
            XSync(display, 0)
            say("died")
            exit(0)
        }
        usleep(1_000)
    }
    say("timeout")
    exit(0)
}
