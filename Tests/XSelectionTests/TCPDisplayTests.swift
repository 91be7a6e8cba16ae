import DesktopSandbox
import Foundation
import TestSupport
import Testing

@testable import XSelection

/// A display reached over TCP (`127.0.0.1:N`): the connection set-up takes
/// its TCP path (a socket to port 6000 + N, the Xauthority entry of an
/// internet host), and owning and reading then work as on a local socket.
@Suite(.requiresXvfb) struct TCPDisplayTests {
    @Test func aSelectionIsServedAndReadOverTCP() throws {
        // A server of its own that listens on TCP, which the shared one does not;
        // -ac: no cookie is needed, as no Xauthority entry names this host.
        let xvfb = try ChildProcess(
            try Tools.find("Xvfb"), ["-displayfd", "1", "-listen", "tcp", "-ac", "-noreset", "-screen", "0", "640x480x24"],
            environment: ["PATH": "/usr/bin:/bin"], reading: .onDemand)
        defer { xvfb.kill9() }
        let number = try #require(xvfb.nextLine(timeout: 30).flatMap { Int($0) }, "\(xvfb.standardError)")
        let display = "127.0.0.1:\(number)"

        let owner = try SelectionOwner(display: display)
        defer { owner.close() }
        try owner.claim(SelectionName("_T_TCP"), payloads: [SelectionPayload(target: "UTF8_STRING", bytes: Array("over tcp".utf8))])
        let reader = try SelectionReader(display: display)
        defer { reader.close() }
        let outcome = try reader.read("_T_TCP", target: "UTF8_STRING")
        #expect(outcome.value.map { String(decoding: $0.bytes, as: UTF8.self) } == "over tcp")
    }

    @Test func aTCPPortNobodyListensOnIsReportedAsNoServer() throws {
        // Display 2999 (port 8999): Xvfb picks low numbers and the restartable ones 3000 and above.
        #expect {
            try SelectionReader(display: "127.0.0.1:2999")
        } throws: { error in
            "\(error)".contains("127.0.0.1:2999")
        }
    }
}
