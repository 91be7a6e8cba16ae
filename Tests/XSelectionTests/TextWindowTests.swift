import Foundation
import TestSupport
import Testing
import XSelection
import XTextWindow

/// The demo window, checked with the standard X tools (xwininfo, xprop, xwd,
/// ImageMagick, xdotool; scripts/bootstrap installs them) against a private
/// Xvfb of its own per test, so pointer and focus belong to that test alone.
@Suite(.requiresXvfb) struct TextWindowTests {
    private func tool(_ name: String, _ arguments: [String], display: String) throws -> CommandResult {
        // LANG=C: xprop then spells every byte outside ASCII as an octal escape, the same on every machine.
        try runCommand(
            Tools.find(name), arguments,
            environment: [
                "DISPLAY": display, "LANG": "C",
                "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
            ])
    }

    /// The colours in the window's pixels, as `#RRGGBB`, read with xwd and ImageMagick.
    private func colours(of window: TextWindow, display: String) throws -> Set<String> {
        let pipeline = "xwd -silent -id \(window.window) | convert xwd:- -format %c histogram:info:-"
        let result = try tool("sh", ["-c", pipeline], display: display)
        let hexes = result.standardOutput.split(separator: "\n").compactMap { line -> String? in
            guard let hash = line.firstIndex(of: "#") else { return nil }
            return String(line.suffix(from: hash).prefix(7))
        }
        return Set(hexes)
    }

    @Test func mapsATitledWindowThatTheStandardToolsSee() async throws {
        let server = try PrivateXServer()
        let window = try TextWindow(
            display: server.display, title: "Grüße – demo", className: "TextWindowTest",
            width: 300, height: 120, lines: [TextWindow.Line("hello")])
        let events = SequenceReader(window.events)
        let id = window.window.description
        #expect(
            eventually {
                (try? tool("xwininfo", ["-id", id], display: server.display))?.standardOutput.contains("Map State: IsViewable") == true
            })
        let info = try tool("xwininfo", ["-id", id], display: server.display).standardOutput
        #expect(info.contains("Width: 300"))
        #expect(info.contains("Height: 120"))

        let props = try tool(
            "xprop", ["-id", id, "_NET_WM_NAME", "WM_NAME", "WM_CLASS", "WM_PROTOCOLS", "_NET_WM_PID"],
            display: server.display
        ).standardOutput
        // The UTF-8 bytes of "Grüße – demo" in _NET_WM_NAME; in WM_NAME its Latin-1 form, the dash outside Latin-1 as "?".
        #expect(props.contains(#"_NET_WM_NAME(UTF8_STRING) = "Gr\303\274\303\237e \342\200\223 demo""#))
        #expect(props.contains(#"WM_NAME(STRING) = "Gr\374\337e ? demo""#))
        #expect(props.contains("WM_CLASS(STRING) = \"textwindowtest\", \"TextWindowTest\""))
        #expect(props.contains("WM_DELETE_WINDOW"))
        #expect(props.contains("_NET_WM_PID(CARDINAL) = \(getpid())"))

        window.setTitle("renamed")
        #expect(
            eventually {
                (try? tool("xprop", ["-id", id, "_NET_WM_NAME"], display: server.display))?.standardOutput.contains("\"renamed\"") == true
            })

        window.close()
        #expect(await events.next(timeout: .seconds(20)) == .finished)
        #expect(eventually { (try? tool("xwininfo", ["-id", id], display: server.display))?.status != 0 })
        #expect(!window.isOpen)
    }

    @Test func drawsEveryLineInItsColoursAndRedrawsWhenTheLinesChange() throws {
        let server = try PrivateXServer()
        let band = TextWindow.Colour(hex: 0x1F6FEB)
        let red = TextWindow.Colour(hex: 0xCF222E)
        let green = TextWindow.Colour(hex: 0x15803D)
        let window = try TextWindow(
            display: server.display, title: "colours", width: 300, height: 120,
            foreground: .black, background: TextWindow.Colour(hex: 0xFAFAF7),
            lines: [
                TextWindow.Line("Heading", colour: .white, background: band, weight: .large),
                TextWindow.Line("alarm", colour: red, weight: .bold)
            ])
        #expect(
            eventually {
                (try? colours(of: window, display: server.display))?.isSuperset(of: ["#1F6FEB", "#CF222E", "#FAFAF7", "#FFFFFF"]) == true
            })

        window.setLines([TextWindow.Line("calm", colour: green)])
        #expect(
            eventually {
                guard let seen = try? colours(of: window, display: server.display) else { return false }
                return seen.contains("#15803D") && !seen.contains("#CF222E") && !seen.contains("#1F6FEB")
            })
    }

    @Test func reportsKeyPressesAndClicks() async throws {
        let server = try PrivateXServer()
        let window = try TextWindow(display: server.display, title: "keys", width: 200, height: 100)
        let events = SequenceReader(window.events)
        let id = window.window.description
        #expect(eventually { (try? tool("xwininfo", ["-id", id], display: server.display))?.standardOutput.contains("IsViewable") == true })

        _ = try tool("xdotool", ["key", "--window", id, "o"], display: server.display)
        #expect(await events.next() == .element(.key(TextWindow.Key(name: "o", text: "o"))))
        _ = try tool("xdotool", ["key", "--window", id, "Escape"], display: server.display)
        let escape = await events.next()
        guard case .element(.key(let key)) = escape else {
            Issue.record("expected a key, got \(String(describing: escape))")
            return
        }
        #expect(key.name == "Escape")

        _ = try tool("xdotool", ["mousemove", "--window", id, "40", "25", "click", "3"], display: server.display)
        #expect(await events.next() == .element(.click(button: 3, x: 40, y: 25)))
        window.close()
    }

    @Test func reportsClosedWhenTheWindowIsDestroyedFromOutside() async throws {
        let server = try PrivateXServer()
        let window = try TextWindow(display: server.display, title: "doomed", width: 200, height: 100)
        let events = SequenceReader(window.events)
        _ = try tool("xdotool", ["windowclose", window.window.description], display: server.display)
        #expect(await events.next() == .element(.closed))
        #expect(await events.next(timeout: .seconds(20)) == .finished)
        #expect(eventually { !window.isOpen })
    }

    @Test func reportsALostServerAndLeavesTheProcessRunning() async throws {
        let server = try PrivateXServer()
        let window = try TextWindow(display: server.display, title: "orphan", lines: [TextWindow.Line("soon gone")])
        let events = SequenceReader(window.events)
        server.kill()
        let event = await events.next(timeout: .seconds(20))
        guard case .element(.connectionLost(let error)) = event else {
            Issue.record("expected connectionLost, got \(String(describing: event))")
            return
        }
        #expect(error.kind == .connectionLost)
        // Calls after the loss are harmless.
        window.setLines([TextWindow.Line("still here")])
        window.close()
        #expect(eventually { !window.isOpen })
    }
}
