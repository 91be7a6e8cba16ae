import Foundation

extension Process {
    /// Starts the process with no signals blocked.
    ///
    /// A child inherits the signal mask of the thread that spawns it, and
    /// `Process` does not reset it. The test runner's worker threads block
    /// SIGTERM, SIGCHLD and others, so a child started from one would ignore
    /// a polite SIGTERM for ever (Xvfb does), and a shell in it would never
    /// see its children exit. Clearing the mask on this thread just for the
    /// spawn gives the child the mask a process started from a shell has.
    func runWithDefaultSignalMask() throws {
        var none = sigset_t()
        var previous = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try run()
    }
}
