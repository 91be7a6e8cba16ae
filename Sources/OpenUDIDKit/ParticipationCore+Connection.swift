import Synchronization
import XSelection

/// The participant's X connection: opened, watched, lost and opened again, on `loop`.
extension ParticipationCore {
    /// Opens the owner, which watches the slots on its own connection (one X
    /// client per app for both); on failure the app goes on without selections.
    /// On `loop` only.
    func connect() {
        guard !stopped, let display = udid.configuration.displayName else { return }
        connection += 1
        let opened = connection
        // Called on the owner's thread: only hands the event to the loop.
        let deliver: @Sendable (@escaping @Sendable (ParticipationCore) -> Void) -> Void = { [weak self, loop] handle in
            guard let core = self else { return }
            loop.post {
                guard core.connection == opened, core.owner != nil else { return }
                handle(core)
            }
        }
        // A burst of owner changes (a client claiming and releasing slots as
        // fast as it can) is one job on the loop, not one per event: while a
        // change waits to be taken, the next ones only find it there.
        let changeWaiting = Atomic<Bool>(false)
        let changed: @Sendable () -> Void = {
            guard !changeWaiting.exchange(true, ordering: .acquiringAndReleasing) else { return }
            deliver { core in
                changeWaiting.store(false, ordering: .releasing)
                core.schedule()
            }
        }
        do throws(XSelectionError) {
            let owner = try SelectionOwner(display: display) { event in
                switch event {
                case .lost(let name, _): deliver { $0.slotLost(name) }
                case .connectionLost: deliver { $0.connectionLost() }
                }
            }
            let ownWindow = owner.window
            do throws(XSelectionError) {
                _ = try owner.watchOwners(of: slots.names) { event in
                    switch event {
                    case .changed(_, .newOwner(let holder), _) where holder?.window == ownWindow:
                        break // our own claim
                    case .changed: changed()
                    case .connectionLost: deliver { $0.connectionLost() }
                    }
                }
            } catch {
                owner.close()
                throw error
            }
            self.owner = owner
            lastConnectionProblem = nil
        } catch {
            owner = nil
            lastConnectionProblem = error.message
            scheduleReconnect()
        }
    }

    /// Where a resolution reads the slots: on the owner's connection, the one
    /// the app serves on (one X client per participant), or nowhere while it
    /// has none. On `loop` only.
    var selectionAccess: Engine.SelectionAccess {
        if let owner { return .through(owner) }
        return .none(lastConnectionProblem ?? "the connection to the X display is lost; the app connects again every second")
    }

    /// On `loop` only.
    func connectionLost() {
        guard !stopped, owner != nil else { return }
        owner?.close()
        owner = nil
        slot = nil
        published = nil
        resolveAndPublish()
        scheduleReconnect()
    }

    /// On `loop` only.
    func scheduleReconnect() {
        guard !reconnecting, udid.configuration.displayName != nil else { return }
        reconnecting = true
        loop.schedule(after: .seconds(1)) { [weak self] in
            guard let self else { return }
            self.reconnecting = false
            guard !self.stopped, self.owner == nil else { return }
            self.connect()
            if self.owner != nil { self.resolveAndPublish() }
        }
    }

    /// On `loop` only.
    func slotLost(_ name: SelectionName) {
        guard let slot, slots.name(slot) == name else { return }
        self.slot = nil
        published = nil
        resolveAndPublish()
    }
}
