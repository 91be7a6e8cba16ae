// A host application that, like a toolkit, installed its own X error handler
// and keeps its own connection, and also uses XSelection.
import CXlib
import Foundation
import Synchronization
import XSelection

/// How often the host's own error handler ran.
let hostHandlerCalls = Atomic<Int>(0)

/// Installs a counting error handler, then owns `selection` through XSelection
/// and lets a peer fault on XSelection's connection (a requestor window that is
/// destroyed before the answer arrives). Then makes a mistake of its own on its
/// own connection (reading a property of a destroyed window).
///
/// Prints `peer-errors N host-calls-before-own-error M host-calls-after-own-error K`:
/// XSelection must keep the peer's fault to itself (M = 0) and hand the host's
/// own error to the host's handler (K = 1).
func runHostWithErrorHandler(selection name: String) -> Never {
    XSetErrorHandler { _, _ in
        hostHandlerCalls.add(1, ordering: .relaxed)
        return 0
    }
    guard let display = XOpenDisplay(nil) else {
        FileHandle.standardError.write(Data("xselection-helper: cannot open display\n".utf8))
        exit(1)
    }
    let root = XDefaultRootWindow(display)
    do throws(XSelectionError) {
        let owner = try SelectionOwner()
        try owner.claim(SelectionName(name), payloads: [SelectionPayload(target: "UTF8_STRING", bytes: Array("host".utf8))])

        let requestor = XCreateSimpleWindow(display, root, 0, 0, 1, 1, 0, 0, 0)
        let selection = XInternAtom(display, name, 0)
        let target = XInternAtom(display, "UTF8_STRING", 0)
        let property = XInternAtom(display, "_XSELECTION_HOST_PROBE", 0)
        // Under a grab the owner's answer cannot be run before the window is gone.
        XGrabServer(display)
        XConvertSelection(display, selection, target, property, requestor, UInt(CurrentTime))
        XDestroyWindow(display, requestor)
        XUngrabServer(display)
        XSync(display, 0)
        let deadline = Date().addingTimeInterval(5)
        while owner.statistics.peerErrors == 0 && Date() < deadline { usleep(5_000) }
        let callsBefore = hostHandlerCalls.load(ordering: .relaxed)

        // Xlib never hands out a destroyed window's id again, so this read must fail with BadWindow.
        let gone = XCreateSimpleWindow(display, root, 0, 0, 1, 1, 0, 0, 0)
        XDestroyWindow(display, gone)
        var type: UInt = 0
        var format: Int32 = 0
        var count: UInt = 0
        var remaining: UInt = 0
        var data: UnsafeMutablePointer<UInt8>?
        _ = XGetWindowProperty(display, gone, UInt(XA_WM_NAME), 0, 16, 0, 0, &type, &format, &count, &remaining, &data)
        if let data { XFree(data) }
        XSync(display, 0)
        let callsAfter = hostHandlerCalls.load(ordering: .relaxed)
        say(
            "peer-errors \(owner.statistics.peerErrors) host-calls-before-own-error \(callsBefore) host-calls-after-own-error \(callsAfter)"
        )
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("xselection-helper: \(error)\n".utf8))
        exit(1)
    }
}

/// Opens each kind of XSelection object on `display` (nil: `$DISPLAY`) and
/// prints one line per kind: `KIND opened DISPLAY` or `KIND error ERRORKIND MESSAGE`.
func runOpen(display: String?) -> Never {
    func report(_ kind: String, _ open: () throws(XSelectionError) -> String) {
        do throws(XSelectionError) {
            say("\(kind) opened \(try open())")
        } catch {
            say("\(kind) error \(error.kind.rawValue) \(error.message)")
        }
    }
    report("reader") { () throws(XSelectionError) in try SelectionReader(display: display).display }
    report("owner") { () throws(XSelectionError) in try SelectionOwner(display: display).display }
    exit(0)
}

/// Writes to a pipe whose reading end is closed, the way libxcb writes to a
/// server that went away, and prints what came of it: `EPIPE` when the write
/// failed instead of raising SIGPIPE, then `unblocked` when SIGPIPE is neither
/// blocked nor pending on the thread afterwards (the host's mask is its own
/// again). `plain` writes on the main thread as a host would, and dies of the
/// signal; `library-thread` writes on a thread the library starts;
/// `reader-call` reads through a SelectionReader first and then writes inside
/// the guard the reader's calls run in.
func runBrokenPipe(where place: String, display: String?) -> Never {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { fatalError("pipe") }
    close(ends[0])
    let writeEnd = ends[1]
    @Sendable func write() -> String {
        var byte: UInt8 = 0
        return Glibc.write(writeEnd, &byte, 1) < 0 && errno == EPIPE ? "EPIPE" : "wrote"
    }
    func pipeSignal(blocked: Bool) -> Bool {
        var set = sigset_t()
        if blocked { pthread_sigmask(SIG_BLOCK, nil, &set) } else { sigpending(&set) }
        return sigismember(&set, SIGPIPE) == 1
    }
    switch place {
    case "library-thread":
        let done = DispatchSemaphore(value: 0)
        let result = Mutex("")
        startThread {
            result.withLock { $0 = write() }
            done.signal()
        }
        done.wait()
        say(result.withLock { $0 })
    case "reader-call":
        do throws(XSelectionError) {
            let reader = try SelectionReader(display: display)
            _ = try reader.read("_XSELECTION_BROKEN_PIPE", target: "UTF8_STRING")
        } catch {
            say("error \(error.message)")
            exit(1)
        }
        say(withBrokenPipesIgnored { write() })
    default:
        say(write())
    }
    say(pipeSignal(blocked: true) || pipeSignal(blocked: false) ? "still blocked or pending" : "unblocked")
    exit(0)
}
