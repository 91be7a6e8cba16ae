import Foundation
import TestSupport
import Testing

@testable import XSelection

/// Watching selections' owners through XFixes, on an owner's connection.
@Suite(.requiresXvfb) struct WatcherTests {
    let display = SharedDisplay.display

    private func text(_ string: String) -> SelectionPayload {
        SelectionPayload(target: "UTF8_STRING", bytes: Array(string.utf8))
    }

    @Test func reportsEachNewOwnerWithTheClaimantsWindowAndClient() async throws {
        let names: [SelectionName] = ["_T_WATCH_NEW_0", "_T_WATCH_NEW_1", "_T_WATCH_NEW_2"]
        let watching = try SelectionOwner(display: display)
        defer { watching.close() }
        let watcher = try watching.watchOwners(of: names)
        let events = SequenceReader(watcher.events)
        #expect(watcher.initialOwners == [names[0]: nil, names[1]: nil, names[2]: nil])

        // Another process claims the first two, in this order.
        let (helper, window) = try startSelectionHelperReportingWindow(
            display: display, ["own", "--prefix", "_T_WATCH_NEW_", "--count", "2", "--text", "x"])
        var holders: [SelectionHolder] = []
        for name in names.prefix(2) {
            let event = await events.next()
            guard case .element(.changed(let changed, .newOwner(let holder?), _)) = event else {
                Issue.record("expected a new owner of \(name), got \(String(describing: event))")
                return
            }
            #expect(changed == name)
            #expect(holder.window == XWindow(window))
            holders.append(holder)
        }
        // One client holds both, and it is the one the server names as owner, not ours.
        let reader = try SelectionReader(display: display)
        let owners = try reader.owners(of: names)
        #expect(owners[names[0]] == holders[0])
        #expect(owners[names[1]] == holders[1])
        #expect(holders[0].client == holders[1].client)
        let ours = try #require(try reader.owners(of: ["_T_WATCH_NEW_OURS"])["_T_WATCH_NEW_OURS"])
        #expect(ours == nil)
        let owner = try SelectionOwner(display: display)
        try owner.claim("_T_WATCH_NEW_OURS", payloads: [text("ours")])
        let oursNow = try #require(try reader.owners(of: ["_T_WATCH_NEW_OURS"])["_T_WATCH_NEW_OURS"] ?? nil)
        #expect(oursNow.client != holders[0].client)

        // The third selection was never claimed: nothing is reported for it.
        #expect(await events.next(timeout: .seconds(1)) == .timedOut)
        _ = helper
    }

    @Test func reportsTheOwnersClientClosingWhenItIsKilled() async throws {
        let names: [SelectionName] = ["_T_WATCH_KILLED_0", "_T_WATCH_KILLED_1"]
        let (helper, window) = try startSelectionHelperReportingWindow(
            display: display, ["own", "--prefix", "_T_WATCH_KILLED_", "--count", "2", "--text", "doomed"])
        let watching = try SelectionOwner(display: display)
        defer { watching.close() }
        let watcher = try watching.watchOwners(of: names)
        let events = SequenceReader(watcher.events)
        for name in names {
            #expect(watcher.initialOwners[name]??.window == XWindow(window))
        }

        helper.signal(SIGKILL)
        #expect(helper.wait(timeout: 20) != nil)
        var changes: [SelectionName: SelectionOwner.OwnerChange] = [:]
        for _ in names {
            guard case .element(.changed(let name, let change, _)) = await events.next() else { break }
            changes[name] = change
        }
        #expect(changes == [names[0]: .ownerClientClosed, names[1]: .ownerClientClosed])

        // The server dropped the selections with the client.
        let reader = try SelectionReader(display: display)
        let outcomes = try reader.read(names, target: "UTF8_STRING", options: .init(deadline: .seconds(5)))
        #expect(outcomes == [names[0]: .noOwner, names[1]: .noOwner])
    }

    @Test func initialOwnersShowsASelectionOwnedBeforeWatchingBegan() throws {
        let (helper, window) = try startSelectionHelperReportingWindow(
            display: display, ["own", "--prefix", "_T_WATCH_INITIAL", "--text", "early"])
        let reader = try SelectionReader(display: display)
        let holder = try #require(try reader.read("_T_WATCH_INITIAL", target: "UTF8_STRING").value?.owner)
        #expect(holder.window == XWindow(window))

        let watching = try SelectionOwner(display: display)
        defer { watching.close() }
        let watcher = try watching.watchOwners(of: ["_T_WATCH_INITIAL", "_T_WATCH_INITIAL_FREE"])
        #expect(watcher.initialOwners == ["_T_WATCH_INITIAL": holder, "_T_WATCH_INITIAL_FREE": nil])
        _ = helper
    }

    @Test func aReleasedSelectionIsReportedAsHavingNoOwner() async throws {
        let name: SelectionName = "_T_WATCH_RELEASED"
        let watching = try SelectionOwner(display: display)
        defer { watching.close() }
        let watcher = try watching.watchOwners(of: [name])
        let events = SequenceReader(watcher.events)
        let owner = try SelectionOwner(display: display)
        try owner.claim(name, payloads: [text("brief")])
        guard case .element(.changed(name, .newOwner(let holder?), let claimed)) = await events.next() else {
            Issue.record("the claim was not reported")
            return
        }
        #expect(holder.window == owner.window)

        try owner.release(name)
        let event = await events.next()
        guard case .element(.changed(name, .newOwner(nil), let released)) = event else {
            Issue.record("expected no owner after the release, got \(String(describing: event))")
            return
        }
        #expect(released.rawValue >= claimed.rawValue)
        let reader = try SelectionReader(display: display)
        #expect(try reader.read(name, target: "UTF8_STRING") == .noOwner)
    }

    // MARK: An owner's watch, on its own connection

    @Test func anOwnerWatchesOtherSelectionsOnItsOwnConnectionAndGoesOnServing() async throws {
        let names: [SelectionName] = ["_T_OWATCH_0", "_T_OWATCH_1", "_T_OWATCH_2"]
        // One of them is owned before the watch begins.
        let (early, earlyWindow) = try startSelectionHelperReportingWindow(
            display: display, ["own", "--prefix", "_T_OWATCH_0", "--text", "early"])
        let owner = try SelectionOwner(display: display)
        try owner.claim("_T_OWATCH_MINE", payloads: [text("mine")])
        let watch = try owner.watchOwners(of: names)
        let events = SequenceReader(watch.events)
        #expect(watch.initialOwners[names[0]]??.window == XWindow(earlyWindow))
        #expect(watch.initialOwners[names[1]] == .some(nil))
        #expect(watch.initialOwners[names[2]] == .some(nil))

        // Another process claims the second: reported with its window.
        let (helper, window) = try startSelectionHelperReportingWindow(
            display: display, ["own", "--prefix", "_T_OWATCH_1", "--text", "x"])
        guard case .element(.changed(names[1], .newOwner(let holder?), _)) = await events.next() else {
            Issue.record("the claim of \(names[1]) was not reported")
            return
        }
        #expect(holder.window == XWindow(window))

        // The owner's own claim is reported too, with its own window.
        try owner.claim(names[2], payloads: [text("third")])
        guard case .element(.changed(names[2], .newOwner(let ours?), _)) = await events.next() else {
            Issue.record("the owner's own claim of \(names[2]) was not reported")
            return
        }
        #expect(ours.window == owner.window)

        // The owner still serves, what it held before the watch and after.
        let reader = try SelectionReader(display: display)
        #expect(try reader.read("_T_OWATCH_MINE", target: "UTF8_STRING").value?.bytes == Array("mine".utf8))
        #expect(try reader.read(names[2], target: "UTF8_STRING").value?.bytes == Array("third".utf8))

        // The first owner dies: its client's closing is reported.
        early.signal(SIGKILL)
        #expect(early.wait(timeout: 20) != nil)
        let closed = await events.next()
        guard case .element(.changed(names[0], .ownerClientClosed, _)) = closed else {
            Issue.record("expected the closing of \(names[0])'s client, got \(String(describing: closed))")
            return
        }
        #expect(await events.next(timeout: .seconds(1)) == .timedOut)
        _ = helper
    }

    @Test func aSecondWatchReplacesTheFirst() async throws {
        let owner = try SelectionOwner(display: display)
        let first = SequenceReader(try owner.watchOwners(of: ["_T_OWATCH_FIRST"]).events)
        let second = SequenceReader(try owner.watchOwners(of: ["_T_OWATCH_SECOND"]).events)
        #expect(await first.next() == .finished)

        let other = try SelectionOwner(display: display)
        try other.claim("_T_OWATCH_FIRST", payloads: [text("no longer watched")])
        try other.claim("_T_OWATCH_SECOND", payloads: [text("watched")])
        let event = await second.next()
        guard case .element(.changed("_T_OWATCH_SECOND", .newOwner(let holder?), _)) = event else {
            Issue.record("expected the claim of the selection watched now, got \(String(describing: event))")
            return
        }
        #expect(holder.window == other.window)
        #expect(await second.next(timeout: .seconds(1)) == .timedOut)
    }
}
