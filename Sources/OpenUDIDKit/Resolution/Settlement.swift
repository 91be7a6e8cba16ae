extension Resolution {
    /// Whether answers still outstanding can change the winner of a vote held
    /// on the answers in hand (docs/PROTOCOL.md §5.1, "Settling early").
    ///
    /// Each outstanding client is one X client, so it can add at most one live
    /// ballot, or move the one it has (its answer in a lower slot would replace
    /// the ballot it cast from a higher one). The vote is settled when:
    ///
    /// - the durable tier decides: live ballots are outranked whatever they
    ///   say; or
    /// - no client is outstanding; or
    /// - in the live tier, the winner leads every other identifier by more than
    ///   the outstanding clients can take from it and give to another, counting
    ///   each tie as lost (a hostile client can claim the earliest `born`)
    ///   unless the winner is the value the app holds, to which the live tier
    ///   gives its ties.
    ///
    /// A settled vote has the winner that waiting for every answer would give.
    ///
    /// - Parameters:
    ///   - resolution: The vote over every candidate in hand.
    ///   - outstanding: The X clients (the `client` of `Candidate.Source.selection`)
    ///     that owned, at the owner query, a selection slot that has not answered.
    /// - Returns: Whether no answers of the outstanding clients can change the winner.
    package static func isSettled(_ resolution: Resolution, outstanding: Set<UInt32>) -> Bool {
        isSettled(
            decidedBy: resolution.decidedBy, tally: resolution.tally, agreeing: resolution.agreeing,
            tiesGoTo: resolution.liveTiesGoTo, outstanding: outstanding)
    }

    /// Whether the ballots' winner wins whatever the `outstanding` clients vote.
    static func isSettled(_ ballots: Ballots, outstanding: Set<UInt32>) -> Bool {
        let tally = ballots.tally()
        let winner = tally.first?.identifier
        return isSettled(
            decidedBy: ballots.tier, tally: tally, agreeing: ballots.voting.filter { $0.record.id == winner },
            tiesGoTo: ballots.preferred, outstanding: outstanding)
    }

    private static func isSettled(
        decidedBy: Tier?, tally: [Tally], agreeing: [Candidate], tiesGoTo: Identifier?, outstanding: Set<UInt32>
    ) -> Bool {
        if decidedBy == .durable || outstanding.isEmpty { return true }
        guard let leader = tally.first else { return false }
        // Outstanding clients whose counted ballot is for the winner may move it.
        let movable = Set(
            agreeing.compactMap { candidate -> UInt32? in
                if case .selection(_, let client) = candidate.source, outstanding.contains(client) { return client }
                return nil
            }
        ).count
        let runnerUp = tally.dropFirst().first?.votes ?? 0
        let winnerAtWorst = leader.votes - movable
        let challengerAtBest = runnerUp + outstanding.count
        if winnerAtWorst > challengerAtBest { return true }
        let winsTies = tiesGoTo != nil && leader.identifier == tiesGoTo
        return winnerAtWorst == challengerAtBest && winsTies
    }
}
