import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Participants that read each other at the same moment.
///
/// A participant answers for its slot and reads the other slots on one X
/// connection, from one loop. If it could not answer while its own pass waited
/// for the others, two participants reading each other would each wait for the
/// other until the pass's deadline, and every slot would be reported as giving
/// no answer.
@Suite(.requiresXvfb) struct SimultaneousStartTests {
    /// Fifty apps start together on a server of their own, with the selections
    /// alone (no files, no mirror), so each must read the others to agree. The
    /// pass's deadline is raised to 20 s: a slot that still gave no answer was
    /// one whose owner could not answer while it read, not one on a slow machine.
    @Test func fiftyParticipantsStartAtOnceEachReadingWhileAnswering() throws {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let started = Locked<[Int: Participation]>([:])
        let published = Locked<[(app: Int, report: Report)]>([])
        let failures = Locked<[String]>([])
        onThreads(50) { index in
            var configuration = OpenUDID.Configuration(
                display: server.display, namespace: session.namespace, mirror: .none, environment: session.environment)
            configuration.usesFiles = false
            configuration.readDeadline = .seconds(20)
            do {
                // Every resolution the app publishes, from its first on, heard on its own thread.
                let participation = try OpenUDID(app: "org.swarm.app\(index)", configuration: configuration)
                    .participate { change in published.withLock { $0.append((index, change.report)) } }
                started.withLock { $0[index] = participation }
            } catch {
                failures.withLock { $0.append("app\(index): \(error)") }
            }
        }
        let participations = started.withLock { $0 }
        defer { participations.values.forEach { $0.close() } }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(participations.count == 50)

        // Agreed, each having read the other forty-nine slots.
        let agreed = eventually(timeout: 120, every: 0.1) {
            let reports = participations.values.map(\.report)
            return Set(reports.map(\.identifier)).count == 1
                && reports.allSatisfy { report in report.agreeing.count { $0.kind == .selection } >= 49 }
        }
        let reports = participations.values.map(\.report)
        #expect(agreed, "\(Set(reports.map(\.identifier)).count) identifiers; selections read: \(reports.map { $0.agreeing.count })")
        #expect(Set(participations.values.compactMap(\.slot)).count == 50, "each in a slot of its own")
        // Each app's first resolution, made while the others started and read it, is among them.
        #expect(eventually { Set(published.withLock { $0.map(\.app) }).count == 50 }, "\(published.withLock { $0.count }) published")
        let everyReport = published.withLock { $0 } + participations.map { ($0.key, $0.value.report) }
        for (app, report) in everyReport {
            let silent = report.rejected.filter { $0.code == .noAnswer }
            #expect(silent.isEmpty, "app\(app) was not answered by \(silent.map(\.place))")
        }
    }
}
