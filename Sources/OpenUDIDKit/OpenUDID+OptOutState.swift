extension OpenUDID {
    /// Whether this app opted out with `optOut()` and has not opted back in.
    ///
    /// It reads the app's own choice alone: the user's opt-out for every app is
    /// `OpenUDID.User.isOptedOut`, and either makes the app
    /// report the all-zero identifier. Reading it writes nothing.
    public var isOptedOut: Bool {
        if case .optedOut = engine.localCache.read() { return true }
        return false
    }
}
