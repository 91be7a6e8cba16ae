import Foundation
import TestSupport
import Testing

@testable import XSelection

/// Interoperability with Tk, an independent implementation of both sides of
/// the selection protocol that, unlike xclip or xsel, handles private names.
@Suite(.requiresXvfb) struct InteropTests {
    let display = SharedDisplay.display

    /// Prints what Tk gets for each `TYPE` in `sys.argv[2:]` of selection
    /// `sys.argv[1]`. Tk hands data of a type it does not know as a list of
    /// hex bytes; those are decoded, so every line is `TYPE: TEXT`.
    private static let getScript = """
        import sys, tkinter
        root = tkinter.Tk()
        root.withdraw()
        for kind in sys.argv[2:]:
            value = root.selection_get(selection=sys.argv[1], type=kind)
            if kind not in ("UTF8_STRING", "STRING", "TARGETS"):
                value = bytes(int(word, 16) for word in value.split()).decode("utf-8")
            print(f"{kind}: {value}")
        """

    /// Owns selection `sys.argv[1]` and serves `sys.argv[2]` as UTF8_STRING.
    private static let ownScript = """
        import sys, tkinter
        name, text = sys.argv[1], sys.argv[2]
        root = tkinter.Tk()
        root.withdraw()
        def handle(offset, length):
            offset, length = int(offset), int(length)
            return text[offset:offset + length]
        root.selection_handle(handle, selection=name, type="UTF8_STRING", format="UTF8_STRING")
        root.selection_own(selection=name)
        # Tk buffers the claim until its event loop runs; a round trip makes
        # sure the server has it before anyone is told to read.
        root.winfo_pointerxy()
        print("ready", flush=True)
        root.mainloop()
        """

    private func servedByUs(_ name: SelectionName) throws -> SelectionOwner {
        let owner = try SelectionOwner(display: display)
        let result = try owner.claim(
            name,
            payloads: [
                SelectionPayload(target: "UTF8_STRING", bytes: Array("grüße aus Swift ✓".utf8)),
                SelectionPayload(target: "_T_TK_NOTE", type: "_T_TK_NOTE", bytes: Array("{\"note\":\"ünïcode\"}".utf8))
            ])
        guard case .claimed = result else { throw HarnessError("could not claim \(name): \(result)") }
        return owner
    }

    @Test func tkReadsTextAndACustomTargetFromOurOwner() throws {
        let owner = try servedByUs("_T_TK_SERVED")
        let lines = try Tk.run(Self.getScript, display: display, arguments: ["_T_TK_SERVED", "UTF8_STRING", "_T_TK_NOTE"])
        #expect(lines == ["UTF8_STRING: grüße aus Swift ✓", "_T_TK_NOTE: {\"note\":\"ünïcode\"}"])
        #expect(owner.statistics.answered == 2)
    }

    @Test func tkReadsTheTargetsOurOwnerOffers() throws {
        let owner = try servedByUs("_T_TK_SERVED_TARGETS")
        let lines = try Tk.run(Self.getScript, display: display, arguments: ["_T_TK_SERVED_TARGETS", "TARGETS"])
        let targets = try #require(lines.first.flatMap { $0.hasPrefix("TARGETS: ") ? $0.dropFirst(9) : nil }, "\(lines)")
        #expect(Set(targets.split(separator: " ").map(String.init)) == ["TARGETS", "TIMESTAMP", "MULTIPLE", "UTF8_STRING", "_T_TK_NOTE"])
        _ = owner
    }

    @Test func ourReaderReadsASelectionTkOwns() throws {
        let text = "from Tk: ünïcode, ümlauts"
        let tk = try Tk.start(Self.ownScript, display: display, arguments: ["_T_TK_OWNED", text])
        let reader = try SelectionReader(display: display)
        let outcome = try reader.read("_T_TK_OWNED", target: "UTF8_STRING", options: .init(deadline: .seconds(5)))
        let value = try #require(outcome.value, "\(outcome)")
        #expect(["UTF8_STRING", "STRING"].contains(value.type))
        // STRING is ISO Latin-1 (ICCCM 2.7.1), which every character here has.
        let decoded =
            value.type == "STRING" ? String(bytes: value.bytes, encoding: .isoLatin1) : String(bytes: value.bytes, encoding: .utf8)
        #expect(decoded == text)
        #expect(value.format == 8)

        // Tk's owner is another client, the one the server names.
        let owners = try reader.owners(of: ["_T_TK_OWNED"])
        #expect(owners["_T_TK_OWNED"] == value.owner)

        // Our TARGETS parsing against Tk's answer (which lists Tk's own extras too).
        let targets = try #require(try reader.targets(of: "_T_TK_OWNED", options: .init(deadline: .seconds(5))))
        #expect(Set(targets).isSuperset(of: ["TARGETS", "UTF8_STRING"]))
        _ = tk
    }
}
