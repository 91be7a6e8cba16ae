/// What the user's own files say of resets: the marker's generation and the
/// key of the latest reset (docs/PROTOCOL.md §6, §9).
package struct ResetEvidence: Sendable, Hashable {
    /// What was found at the reset marker.
    package enum Marker: Sendable, Hashable {
        /// No marker: the user never reset (or erased everything since).
        case absent
        /// The marker names this generation.
        case present(Int64)
        /// The marker could not be read (it is corrupt, or out of the app's
        /// reach): the app cannot know the generation.
        case unreadable
    }

    /// What was found at the reset marker.
    package var marker: Marker
    /// The key of the marker's generation, where the reset wrote one.
    package var key: ResetKey?

    /// Evidence of `marker` and `key`.
    package init(marker: Marker = .absent, key: ResetKey? = nil) {
        self.marker = marker
        self.key = key
    }

    /// The generation the marker names; 0 without one.
    package var generation: Int64 {
        if case .present(let generation) = marker { generation } else { 0 }
    }
}
