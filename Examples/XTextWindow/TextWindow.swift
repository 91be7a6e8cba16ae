import Foundation
import XSelection

/// A minimal top-level window that shows lines of text, for demos and example programs.
///
/// It has its own connection and thread, like XSelection's `SelectionOwner`, so a program
/// without any toolkit gets a real window without pumping an event loop:
/// it redraws itself when exposed, reports key presses and clicks on
/// `events`, and goes away cleanly when the window manager asks it to close.
/// Like XSelection it never ends the host process, whatever the
/// server does. It is deliberately small: one core font, no layout, no
/// scrolling, no input fields.
///
/// ```swift
/// let window = try TextWindow(title: "Hello", lines: [.init("Hello, X11", weight: .large)])
/// for await event in window.events {
///     if case .key(let key) = event, key.name == "q" { break }
/// }
/// window.close()
/// ```
public final class TextWindow: Sendable {
    /// A colour given by its red, green and blue parts.
    public struct Colour: Sendable, Hashable {
        /// The red part, 0 to 255.
        public var red: UInt8
        /// The green part, 0 to 255.
        public var green: UInt8
        /// The blue part, 0 to 255.
        public var blue: UInt8

        /// Creates a colour from its parts.
        public init(red: UInt8, green: UInt8, blue: UInt8) {
            self.red = red
            self.green = green
            self.blue = blue
        }

        /// Creates a colour from a 24-bit `0xRRGGBB` value, as in CSS.
        public init(hex: UInt32) {
            self.init(
                red: UInt8(truncatingIfNeeded: hex >> 16), green: UInt8(truncatingIfNeeded: hex >> 8),
                blue: UInt8(truncatingIfNeeded: hex))
        }

        /// Black.
        public static let black = Colour(hex: 0x000000)
        /// White.
        public static let white = Colour(hex: 0xFFFFFF)
    }

    /// A point on the screen, in pixels from its top-left corner.
    public struct Point: Sendable, Hashable {
        /// Pixels from the left edge.
        public var x: Int
        /// Pixels from the top edge.
        public var y: Int

        /// Creates a point.
        public init(x: Int, y: Int) {
            self.x = x
            self.y = y
        }
    }

    /// How heavy and how large a line's text is.
    public enum Weight: Sendable, Hashable {
        /// The body font.
        case regular
        /// The bold variant of the body font.
        case bold
        /// A larger bold font, for headings.
        case large
    }

    /// One line of text and how to draw it.
    public struct Line: Sendable, Hashable {
        /// The text. Core X fonts cover Latin-1; other characters show as `?`.
        public var text: String
        /// The text colour; nil means the window's foreground.
        public var colour: Colour?
        /// A band of colour behind the whole width of the line; nil means none.
        /// A line with a band gets extra room above and below, so the band reads as a bar.
        public var background: Colour?
        /// How heavy and how large the text is.
        public var weight: Weight

        /// Creates a line; `Line()` is an empty line that keeps one line of space.
        public init(_ text: String = "", colour: Colour? = nil, background: Colour? = nil, weight: Weight = .regular) {
            self.text = text
            self.colour = colour
            self.background = background
            self.weight = weight
        }
    }

    /// A key the user pressed while the window had the focus.
    public struct Key: Sendable, Hashable, CustomStringConvertible {
        /// The keysym's name as `XKeysymToString` spells it: `o`, `O`, `Escape`, `space`, `Return`.
        public let name: String
        /// The text the key types, if any (`"o"` for the `o` key, empty for `Escape`).
        public let text: String

        /// Creates a key report.
        public init(name: String, text: String) {
            self.name = name
            self.text = text
        }

        /// The keysym name.
        public var description: String { name }
    }

    /// Something that happened to the window, reported on `events`.
    public enum Event: Sendable, Equatable {
        /// A key was pressed.
        case key(Key)
        /// A mouse button was pressed at (`x`, `y`), in pixels from the window's top-left corner.
        case click(button: Int, x: Int, y: Int)
        /// The user closed the window through the window manager. The window is
        /// already gone, and `events` ends after this.
        case closed
        /// The server went away; the window is gone, and `events` ends after this.
        case connectionLost(XSelectionError)
    }

    /// The display the window is on.
    public let display: String
    /// The window's id, for tools that look at it (`xwininfo -id`, `xwd -id`).
    public let window: XWindow
    /// Key presses, clicks and the end of the window, in the order they happened.
    public let events: AsyncStream<Event>

    /// The window's thread, which holds its connection.
    private let loop: EventLoop
    /// The core, made and used on `loop` only.
    private let core: LoopBound<TextWindowCore>

    /// Opens `display` (or `$DISPLAY`), creates the window and maps it.
    ///
    /// - Parameters:
    ///   - display: The display name, such as `":0"`; nil means `$DISPLAY`.
    ///   - title: The window title, set as both `WM_NAME` and `_NET_WM_NAME`.
    ///   - className: The class in `WM_CLASS` (the instance name is its lowercase form);
    ///     nil leaves `WM_CLASS` unset.
    ///   - origin: Where to put the window's top-left corner, as a user's request
    ///     that window managers honour (`-geometry +X+Y`); nil lets the window manager choose.
    ///   - width: The initial width in pixels.
    ///   - height: The initial height in pixels.
    ///   - foreground: The colour of text that names none.
    ///   - background: The window's background.
    ///   - lines: The text to show at first.
    /// - Throws: `XSelectionError` when the display cannot be opened or does not answer.
    public init(
        display: String? = nil, title: String, className: String? = nil, origin: Point? = nil, width: Int = 480, height: Int = 320,
        foreground: Colour = .black, background: Colour = .white, lines: [Line] = []
    ) throws(XSelectionError) {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let setup = TextWindowCore.Setup(
            title: title, className: className, origin: origin, width: max(1, width), height: max(1, height),
            foreground: foreground, background: background, lines: lines)
        self.events = stream
        let loop = EventLoop(name: "openudid-window")
        let bound = LoopBound<TextWindowCore>()
        let opened = loop.sync(waitingAtMost: .seconds(30)) { () -> Result<Opened, XSelectionError> in
            do throws(XSelectionError) {
                let core = try TextWindowCore(display: display, setup: setup, events: continuation)
                bound.value = core
                loop.watch(core.connection.fd) {}
                loop.beforeSleep { [weak loop] in
                    if bound.value?.turn() == false {
                        bound.value = nil
                        loop?.stop()
                    }
                    return nil
                }
                return .success(Opened(name: core.connection.name, window: UInt32(truncatingIfNeeded: core.window)))
            } catch {
                continuation.finish()
                return .failure(error)
            }
        }
        guard case .success(let info)? = opened else {
            loop.stop()
            if case .failure(let error)? = opened { throw error }
            throw XSelectionError(.timedOut, display: display ?? "", "opening the X display took longer than 30 s")
        }
        self.loop = loop
        self.core = bound
        self.display = info.name
        self.window = XWindow(info.window)
    }

    deinit { loop.stop { [core] in Self.finish(core) } }

    /// Replaces the text and redraws, unless it is what the window already shows.
    public func setLines(_ lines: [Line]) {
        loop.post { [core] in core.value?.setLines(lines) }
    }

    /// Changes the window title.
    public func setTitle(_ title: String) {
        loop.post { [core] in core.value?.setTitle(title) }
    }

    /// Whether the window still exists (it was neither closed nor lost).
    public var isOpen: Bool { !loop.isStopped }

    /// Destroys the window and closes its connection; `events` then ends.
    ///
    /// Returns once the window's thread is done with libX11 (or after two
    /// seconds), so a program may exit right after it: exiting while that
    /// thread still closes the connection can crash the process.
    public func close() {
        loop.stop(waitingAtMost: .seconds(2)) { [core] in Self.finish(core) }
    }

    private static func finish(_ core: LoopBound<TextWindowCore>) {
        core.value?.finish()
        core.value = nil
    }
}

private struct Opened: Sendable {
    var name: String
    var window: UInt32
}
