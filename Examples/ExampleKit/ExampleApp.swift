import Dispatch
import Foundation
import OpenUDIDKit
import Synchronization
import XSelection
import XTextWindow

/// One of the cooperating example apps: a window that shows the identifier
/// the app shares with the others, where it came from, and follows it live.
///
/// ```swift
/// ExampleApp(id: "com.acme.notes", name: "Acme Notes", accent: 0x1F6FEB).run()
/// ```
///
/// The app opens its window at once and takes part in the session through the
/// async `OpenUDID.participate()`, so a slow keyring never holds the window
/// blank or its keys unanswered. It prints
/// the identifier on standard output whenever it changes (for scripts and
/// tests), and redraws on every change and twice a second, so that votes cast
/// by apps that come and go show up too. The `o` key, a click, or SIGUSR1
/// toggles the app's opt-out; `q`, Escape, closing the window, SIGINT or
/// SIGTERM quit.
public struct ExampleApp: Sendable {
    /// The reverse-DNS app id, such as `com.acme.notes`.
    public let id: String
    /// The name in the window's title and heading.
    public let name: String
    /// The app's colour, `0xRRGGBB`, so the apps tell apart at a glance.
    public let accent: UInt32

    /// Describes an example app.
    ///
    /// - Parameters:
    ///   - id: The reverse-DNS app id; its first two parts name the vendor.
    ///   - name: The human name.
    ///   - accent: The app's colour as `0xRRGGBB`.
    public init(id: String, name: String, accent: UInt32) {
        self.id = id
        self.name = name
        self.accent = accent
    }

    /// The window title: the name and the app id, which scripts look windows up by.
    public var title: String { "\(name) - \(id)" }

    /// Runs the app until the user or a signal quits it; never returns.
    ///
    /// Exit status: 0 when quit, 1 when the display cannot be opened or the
    /// app id is invalid, 2 for a wrong command line.
    public func run() -> Never {
        let command = CommandLine.arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? id
        let options = Options(Options.command(command, app: self).parseOrExit())

        // First of all, so that a SIGTERM while the app starts still ends it cleanly.
        let inbox = SignalInbox()
        inbox.install()

        let udid: OpenUDID
        do {
            udid = try OpenUDID(app: id, configuration: options.configuration)
        } catch {
            Self.fail("\(command): \(error.description)", status: 1)
        }
        let page = StatusPage(app: self, namespace: options.namespace)
        let window: TextWindow
        do {
            window = try TextWindow(
                display: options.display, title: title, className: name.replacingOccurrences(of: " ", with: ""),
                origin: options.position.map { TextWindow.Point(x: $0.x, y: $0.y) },
                width: options.size?.width ?? 620, height: options.size?.height ?? 430,
                foreground: StatusPage.foreground,
                background: StatusPage.background, lines: page.placeholder())
        } catch {
            Self.fail("\(command): \(error.description)", status: 1)
        }

        let controller = Controller(udid: udid, window: window, page: page, quit: inbox.quit)
        inbox.whenToggled { controller.requestToggle() }
        let sources = controller.start()
        withExtendedLifetime(sources) { inbox.quit.wait() }
        controller.shutDown()
        exit(0)
    }

    static func write(_ text: String, to handle: FileHandle) {
        handle.write(Data(text.utf8))
    }

    static func fail(_ message: String, status: Int32) -> Never {
        write(message + "\n", to: .standardError)
        exit(status)
    }
}

/// The signals the app answers: SIGINT and SIGTERM quit, SIGUSR1 toggles the opt-out.
private final class SignalInbox: Sendable {
    /// Signalled once when the app should quit.
    let quit = DispatchSemaphore(value: 0)
    private let onToggle = Mutex<(@Sendable () -> Void)?>(nil)

    /// Sets what SIGUSR1 does; until then it does nothing.
    func whenToggled(_ action: @escaping @Sendable () -> Void) {
        onToggle.withLock { $0 = action }
    }

    /// Takes the signals as events, on a thread of their own.
    ///
    /// The signals are blocked first, in this thread and so in every thread
    /// started after it, and a thread takes them with `sigwait`: a signal that
    /// comes at any moment after this call waits, pending, to be taken. (A
    /// dispatch signal source installs its handler later, on another thread;
    /// a signal in between was lost, and a parent's SIGTERM went unheard.)
    /// Call it before anything starts a thread.
    func install() {
        var handled = sigset_t()
        sigemptyset(&handled)
        for number in [SIGINT, SIGTERM, SIGUSR1] { sigaddset(&handled, number) }
        pthread_sigmask(SIG_BLOCK, &handled, nil)
        let blocked = handled
        let thread = Thread { [self] in
            var waitingFor = blocked
            while true {
                var number: Int32 = 0
                guard sigwait(&waitingFor, &number) == 0 else { continue }
                if number == SIGUSR1 {
                    onToggle.withLock { $0 }?()
                } else {
                    quit.signal()
                }
            }
        }
        thread.name = "signals"
        thread.start()
    }
}

/// Ties the participation, the window and the signals together.
///
/// Everything that changes the app's state (toggling the opt-out, rendering)
/// runs on `queue`, one at a time, so a key press and a signal never race.
private final class Controller: Sendable {
    private let udid: OpenUDID
    /// Nil until the first resolution is done; the window shows a placeholder until then.
    private let participation = Mutex<Participation?>(nil)
    private let window: TextWindow
    private let page: StatusPage
    private let queue = DispatchQueue(label: "ExampleKit.Controller")
    private let quit: DispatchSemaphore
    /// Whether this app is opted out, as the user last chose.
    private let optedOut = Mutex(false)
    /// Set when the app quits before its participation began.
    private let stopped = Mutex(false)

    init(udid: OpenUDID, window: TextWindow, page: StatusPage, quit: DispatchSemaphore) {
        self.quit = quit
        self.udid = udid
        self.window = window
        self.page = page
    }

    /// Starts following changes, window events and the clock; the caller
    /// keeps the returned sources alive while the app runs.
    func start() -> [any DispatchSourceProtocol] {
        // The report is cached, so reading it twice a second costs nothing; it
        // shows votes of apps that joined or left without changing the identifier.
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(500), repeating: .milliseconds(500))
        timer.setEventHandler { [self] in render() }
        timer.resume()

        // Detached: the main thread is about to block until the app quits.
        Task.detached { [self] in
            // The first resolution runs on a thread of the library's; the window is
            // up and answers keys meanwhile.
            let participation: Participation
            do {
                participation = try await udid.participate()
            } catch {
                // A process runs a participation per slot at most; this app runs one.
                ExampleApp.write("\(error)\n", to: .standardError)
                return
            }
            let quitAlready = stopped.withLock { quitting in
                if !quitting { self.participation.withLock { $0 = participation } }
                return quitting
            }
            if quitAlready {
                participation.close()
                return
            }
            optedOut.withLock { $0 = participation.report.optOut == .app }
            for await change in participation.changes {
                ExampleApp.write(change.identifier.hex + "\n", to: .standardOutput)
                queue.async { self.render() }
                // A resolution is reported as it was before the app wrote its own
                // copies; one more, a moment later, shows the app's own ballot too.
                Task { [self] in
                    try? await Task.sleep(for: .milliseconds(300))
                    await participation.refresh()
                    queue.async { self.render() }
                }
            }
        }
        let window = window
        Task.detached { [self] in
            for await event in window.events {
                switch event {
                case .key(let key) where key.name == "o" || key.name == "O":
                    requestToggle()
                case .click:
                    requestToggle()
                case .key(let key) where key.name == "q" || key.name == "Q" || key.name == "Escape":
                    quit.signal()
                default:
                    break
                }
            }
            // The window was closed or the display went away.
            quit.signal()
        }
        queue.async { self.render() }
        return [timer]
    }

    /// Toggles the opt-out, after whatever the app is doing now.
    func requestToggle() {
        queue.async { self.toggleOptOut() }
    }

    func shutDown() {
        let participation = stopped.withLock { quitting in
            quitting = true
            return self.participation.withLock { $0 }
        }
        participation?.close()
        window.close()
    }

    /// On `queue` only.
    private func render() {
        guard let participation = participation.withLock({ $0 }) else {
            window.setLines(page.placeholder())
            return
        }
        window.setLines(page.lines(for: participation.report, slot: participation.slot))
    }

    /// On `queue` only.
    private func toggleOptOut() {
        // Before the first resolution there is nothing to toggle yet.
        guard let participation = participation.withLock({ $0 }) else { return }
        let wasOut = optedOut.withLock { $0 }
        do {
            if wasOut { try udid.optIn() } else { try udid.optOut() }
            optedOut.withLock { $0 = !wasOut }
        } catch {
            ExampleApp.write("\(page.app.id): \(error.description)\n", to: .standardError)
        }
        participation.refresh()
        render()
    }
}
