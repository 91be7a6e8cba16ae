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

    /// What was found at the reset key.
    package enum Key: Sendable, Hashable {
        /// No key file: no reset that writes one happened (none at all, or
        /// one by an app of 0.2.0), so no identifier needs binding.
        case absent
        /// The key file, as read; it names its own generation.
        case read(ResetKey)
        /// A key file stands there but cannot be used (not a regular file,
        /// over its size, not a key): the key is unknown, not absent.
        case unusable
    }

    /// How the selections of a generation are checked against the key.
    package enum Binding: Sendable, Hashable {
        /// Nothing needs binding: no reset of this generation wrote a key.
        case none
        /// Identifiers of the generation must be bound to this key.
        case key(ResetKey)
        /// The key of the generation cannot be known: no selection of it can be checked.
        case unknown
    }

    /// What was found at the reset marker.
    package var marker: Marker
    /// What was found at the reset key.
    package var key: Key

    /// Evidence of `marker` and `key`.
    package init(marker: Marker = .absent, key: Key = .absent) {
        self.marker = marker
        self.key = key
    }

    /// The generation the marker names; 0 without one.
    package var generation: Int64 {
        if case .present(let generation) = marker { generation } else { 0 }
    }

    /// How the selections of `generation` are checked: against the key when the
    /// key file names that generation; not at all before any reset or where no
    /// key file exists; and as unknown where the file cannot be read or names
    /// another generation (a reset cut short, or one by an app of 0.2.0 after a
    /// reset that wrote a key), until a reset writes the key of the generation.
    package func binding(of generation: Int64) -> Binding {
        guard generation > 0 else { return .none }
        switch key {
        case .absent: return .none
        case .read(let key) where key.generation == generation: return .key(key)
        case .read, .unusable: return .unknown
        }
    }

    /// The key of `generation`, when the key file holds it.
    package func key(of generation: Int64) -> ResetKey? {
        if case .key(let key) = binding(of: generation) { key } else { nil }
    }
}
