import CXlib
import Foundation
import XSelection

/// The drawing side of `TextWindow`; lives on the window's thread only.
final class TextWindowCore {
    /// What the window starts with.
    struct Setup: Sendable {
        var title: String
        var className: String?
        var origin: TextWindow.Point?
        var width: Int
        var height: Int
        var foreground: TextWindow.Colour
        var background: TextWindow.Colour
        var lines: [TextWindow.Line]
    }

    /// A font and how to give it back.
    private struct Font {
        let info: UnsafeMutablePointer<XFontStruct>
        /// Loaded with `XLoadQueryFont` (a server resource), rather than only queried.
        let loaded: Bool
        /// No bold face was found: bold text is drawn twice, one pixel apart.
        let fakeBold: Bool
        var ascent: Int { Int(info.pointee.ascent) }
        var descent: Int { Int(info.pointee.descent) }
    }

    let connection: DisplayConnection
    let window: UInt
    var stopRequested = false

    private let events: AsyncStream<TextWindow.Event>.Continuation
    private let colormap: Colormap
    private let gc: OpaquePointer
    private let foreground: TextWindow.Colour
    private let protocolsAtom: UInt
    private let deleteAtom: UInt
    private var fonts: [TextWindow.Weight: Font] = [:]
    private var pixels: [TextWindow.Colour: UInt] = [:]
    private var lines: [TextWindow.Line]
    private var width: Int
    private var needsRedraw = true
    private var windowGone = false

    // Core fonts, best first. Xvfb and every X server have "fixed" built in; the
    // misc-fixed faces come with xfonts-base and read far better on screenshots.
    private static let fontNames: [TextWindow.Weight: [String]] = [
        .regular: [
            "-misc-fixed-medium-r-normal--15-*-*-*-*-*-iso8859-1", "9x15", "-misc-fixed-medium-r-normal--13-*-*-*-*-*-iso8859-1", "fixed"
        ],
        .bold: ["-misc-fixed-bold-r-normal--15-*-*-*-*-*-iso8859-1", "9x15bold", "-misc-fixed-bold-r-normal--13-*-*-*-*-*-iso8859-1"],
        .large: ["-misc-fixed-medium-r-normal--20-*-*-*-*-*-iso8859-1", "10x20", "-misc-fixed-bold-r-normal--18-*-*-*-*-*-iso8859-1"]
    ]

    /// Room, in pixels, to the left of the text and above the first line.
    private static let margin = 14
    /// Extra room above and below a line with a background band.
    private static let bandPadding = 7
    /// Room between lines.
    private static let leading = 4

    init(display: String?, setup: Setup, events: AsyncStream<TextWindow.Event>.Continuation) throws(XSelectionError) {
        connection = try DisplayConnection(name: display)
        let d = connection.display
        self.events = events
        self.foreground = setup.foreground
        self.lines = setup.lines
        self.width = setup.width
        colormap = XDefaultColormap(d, XDefaultScreen(d))
        let atoms = try connection.atoms(["WM_PROTOCOLS", "WM_DELETE_WINDOW", "_NET_WM_NAME", "UTF8_STRING", "_NET_WM_PID"])
        protocolsAtom = atoms[0]
        deleteAtom = atoms[1]

        let background = Self.allocate(setup.background, display: d, colormap: colormap)
        let origin = setup.origin ?? TextWindow.Point(x: 0, y: 0)
        let window = XCreateSimpleWindow(
            d, connection.root, Int32(clamping: origin.x), Int32(clamping: origin.y),
            UInt32(setup.width), UInt32(setup.height), 0, 0, background)
        self.window = window
        var hints = XSizeHints()
        // USPosition: the user asked for this place, so a window manager keeps it.
        hints.flags = PSize | (setup.origin != nil ? USPosition : 0)
        hints.x = Int32(clamping: origin.x)
        hints.y = Int32(clamping: origin.y)
        hints.width = Int32(clamping: setup.width)
        hints.height = Int32(clamping: setup.height)
        XSetWMNormalHints(d, window, &hints)
        pixels[setup.background] = background
        XSelectInput(d, window, ExposureMask | KeyPressMask | ButtonPressMask | StructureNotifyMask)
        var delete = deleteAtom
        XSetWMProtocols(d, window, &delete, 1)
        if let className = setup.className {
            // WM_CLASS is two NUL-terminated strings: the instance, then the class.
            var bytes = Array(className.lowercased().utf8) + [0] + Array(className.utf8) + [0]
            XChangeProperty(d, window, UInt(XA_WM_CLASS), UInt(XA_STRING), 8, PropModeReplace, &bytes, Int32(bytes.count))
        }
        var pid = Int(getpid())
        withUnsafeBytes(of: &pid) { raw in
            _ = XChangeProperty(
                d, window, atoms[4], UInt(XA_CARDINAL), 32, PropModeReplace,
                raw.baseAddress!.assumingMemoryBound(to: UInt8.self), 1)
        }
        gc = XCreateGC(d, window, 0, nil)
        loadFonts()
        applyTitle(setup.title, netName: atoms[2], utf8: atoms[3])
        XMapWindow(d, window)
        connection.flush()
        try connection.checkAlive()
    }

    // MARK: The loop

    /// One turn of the window's loop, run before it sleeps: every event
    /// libX11 holds, then a redraw if one is due. When the window is closed or
    /// the server gone, it tears the window down and finishes `events`.
    ///
    /// - Returns: Whether the window goes on.
    func turn() -> Bool {
        if connection.isAlive && !stopRequested {
            while connection.pending() > 0 { handle(connection.nextEvent()) }
            if needsRedraw && !windowGone { redraw() }
        }
        guard !stopRequested, connection.isAlive else {
            finish()
            return false
        }
        return true
    }

    /// Tears the window down and finishes `events`, saying first that the server went away if it did.
    func finish() {
        guard !finished else { return }
        finished = true
        if !connection.isAlive {
            events.yield(.connectionLost(.connectionLost(connection.name)))
            windowGone = true
        }
        tearDown()
        events.finish()
    }

    private var finished = false

    private func handle(_ event: XEvent) {
        switch event.type {
        case Expose:
            // Expose events come in runs; one redraw after the run covers them all.
            needsRedraw = true
        case ConfigureNotify:
            let configure = event.xconfigure
            if Int(configure.width) != width {
                width = Int(configure.width)
                needsRedraw = true
            }
        case KeyPress:
            var key = event.xkey
            var buffer = [CChar](repeating: 0, count: 32)
            var keysym: KeySym = 0
            let count = Int(XLookupString(&key, &buffer, Int32(buffer.count - 1), &keysym, nil))
            // Modifier keys alone type nothing and mean nothing to a reader of `events`.
            if isModifier(keysym) { return }
            let name = XKeysymToString(keysym).map { String(cString: $0) } ?? "0x" + String(keysym, radix: 16)
            let text = String(decoding: buffer.prefix(max(0, count)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            events.yield(.key(TextWindow.Key(name: name, text: text)))
        case ButtonPress:
            let button = event.xbutton
            events.yield(.click(button: Int(button.button), x: Int(button.x), y: Int(button.y)))
        case ClientMessage:
            let message = event.xclient
            if message.message_type == protocolsAtom, message.format == 32, UInt(bitPattern: message.data.l.0) == deleteAtom {
                events.yield(.closed)
                stopRequested = true
            }
        case DestroyNotify:
            if event.xdestroywindow.window == window {
                windowGone = true
                events.yield(.closed)
                stopRequested = true
            }
        case MappingNotify:
            var mapping = event.xmapping
            XRefreshKeyboardMapping(&mapping)
        default:
            break
        }
    }

    private func isModifier(_ keysym: KeySym) -> Bool {
        // XK_Shift_L (0xffe1) through XK_Hyper_R (0xffee), plus XK_ISO_Level3_Shift and friends.
        (0xffe1...0xffee).contains(keysym) || (0xfe01...0xfe13).contains(keysym) || keysym == 0xff7e
    }

    private func tearDown() {
        let alive = connection.isAlive
        // `.large` may share the bold face: free each font once.
        var seen = Set<UnsafeMutablePointer<XFontStruct>>()
        for font in fonts.values where seen.insert(font.info).inserted {
            if alive && font.loaded {
                XFreeFont(connection.display, font.info)
            } else {
                // Frees only client memory, so it is safe when the server is gone.
                XFreeFontInfo(nil, font.info, 1)
            }
        }
        fonts.removeAll()
        if alive {
            XFreeGC(connection.display, gc)
            if !windowGone { XDestroyWindow(connection.display, window) }
            connection.flush()
        }
        windowGone = true
        connection.close()
    }

    // MARK: Content

    func setLines(_ lines: [TextWindow.Line]) {
        guard lines != self.lines else { return }
        self.lines = lines
        needsRedraw = true
    }

    func setTitle(_ title: String) {
        guard connection.isAlive, let atoms = try? connection.atoms(["_NET_WM_NAME", "UTF8_STRING"]) else { return }
        applyTitle(title, netName: atoms[0], utf8: atoms[1])
        connection.flush()
    }

    private func applyTitle(_ title: String, netName: UInt, utf8: UInt) {
        // WM_NAME is Latin-1 for old tools (xwininfo, xprop); _NET_WM_NAME is UTF-8 for the rest.
        var latin1 = Self.latin1(title).map { CChar(bitPattern: $0) } + [0]
        XStoreName(connection.display, window, &latin1)
        var bytes = Array(title.utf8)
        XChangeProperty(connection.display, window, netName, utf8, 8, PropModeReplace, &bytes, Int32(bytes.count))
    }

    // MARK: Drawing

    private func loadFonts() {
        let d = connection.display
        func load(_ names: [String]) -> UnsafeMutablePointer<XFontStruct>? {
            for name in names {
                if let font = XLoadQueryFont(d, name) { return font }
            }
            return nil
        }
        let regular: Font
        if let font = load(Self.fontNames[.regular]!) {
            regular = Font(info: font, loaded: true, fakeBold: false)
        } else if let font = XQueryFont(d, XGContextFromGC(gc)) {
            // Not even "fixed": draw with whatever font the server gave the GC.
            regular = Font(info: font, loaded: false, fakeBold: false)
        } else {
            return
        }
        fonts[.regular] = regular
        let bold = load(Self.fontNames[.bold]!).map { Font(info: $0, loaded: true, fakeBold: false) }
        fonts[.bold] = bold
        fonts[.large] = load(Self.fontNames[.large]!).map { Font(info: $0, loaded: true, fakeBold: false) } ?? bold
    }

    private func font(for weight: TextWindow.Weight) -> Font? {
        if let font = fonts[weight] { return font }
        guard let regular = fonts[.regular] else { return nil }
        return weight == .regular ? regular : Font(info: regular.info, loaded: regular.loaded, fakeBold: true)
    }

    private func pixel(_ colour: TextWindow.Colour) -> UInt {
        if let pixel = pixels[colour] { return pixel }
        let pixel = Self.allocate(colour, display: connection.display, colormap: colormap)
        pixels[colour] = pixel
        return pixel
    }

    /// A pixel value for `colour`: exact on TrueColor screens, the nearest the
    /// colormap can give elsewhere, black or white if the colormap is full.
    private static func allocate(_ colour: TextWindow.Colour, display: OpaquePointer, colormap: Colormap) -> UInt {
        var xcolor = XColor()
        xcolor.red = UInt16(colour.red) * 257
        xcolor.green = UInt16(colour.green) * 257
        xcolor.blue = UInt16(colour.blue) * 257
        xcolor.flags = CChar(DoRed | DoGreen | DoBlue)
        if XAllocColor(display, colormap, &xcolor) != 0 { return xcolor.pixel }
        let screen = XDefaultScreen(display)
        let light = Int(colour.red) * 3 + Int(colour.green) * 6 + Int(colour.blue) > 127 * 10
        return light ? XWhitePixel(display, screen) : XBlackPixel(display, screen)
    }

    private func redraw() {
        needsRedraw = false
        guard connection.isAlive, let regular = font(for: .regular) else { return }
        let d = connection.display
        XClearWindow(d, window)
        // A heading band at the very top sits flush with the window's edge.
        var y = lines.first?.background != nil ? 0 : Self.margin
        for line in lines {
            let font = font(for: line.weight) ?? regular
            let band = line.background != nil ? Self.bandPadding : 0
            let height = font.ascent + font.descent + Self.leading + 2 * band
            if let background = line.background {
                XSetForeground(d, gc, pixel(background))
                XFillRectangle(d, window, gc, 0, Int32(y), UInt32(max(width, 1)), UInt32(height))
            }
            if !line.text.isEmpty {
                XSetForeground(d, gc, pixel(line.colour ?? foreground))
                // A font that was only queried names the GC's own font, which the GC already uses.
                if font.loaded { XSetFont(d, gc, font.info.pointee.fid) }
                var bytes = Self.latin1(line.text).map { CChar(bitPattern: $0) }
                let baseline = Int32(y + band + Self.leading / 2 + font.ascent)
                XDrawString(d, window, gc, Int32(Self.margin), baseline, &bytes, Int32(bytes.count))
                if font.fakeBold {
                    XDrawString(d, window, gc, Int32(Self.margin + 1), baseline, &bytes, Int32(bytes.count))
                }
            }
            y += height
        }
        connection.flush()
    }

    /// `text` in Latin-1, the encoding of core fonts; anything else becomes `?`.
    private static func latin1(_ text: String) -> [UInt8] {
        text.unicodeScalars.map { $0.value < 256 ? UInt8($0.value) : UInt8(ascii: "?") }
    }
}
