import Glibc

/// Runs `body` with SIGPIPE blocked on the calling thread.
///
/// libxcb writes to the server's socket with `writev`. When the server has
/// gone away between its last read and a write, the kernel raises SIGPIPE on
/// the writing thread, and its default action ends the process: the host app,
/// for a library. Blocked, the write fails with EPIPE instead, which libxcb
/// reports as a lost connection. A SIGPIPE the body raised is taken off the
/// thread before its mask is restored, so the host never sees it; a thread
/// that had SIGPIPE blocked already is left as it was.
package func withBrokenPipesIgnored<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
    var pipeSignal = sigset_t()
    sigemptyset(&pipeSignal)
    sigaddset(&pipeSignal, SIGPIPE)
    var previous = sigset_t()
    pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
    guard sigismember(&previous, SIGPIPE) != 1 else { return try body() }
    defer {
        var pending = sigset_t()
        if sigpending(&pending) == 0, sigismember(&pending, SIGPIPE) == 1 {
            var now = timespec(tv_sec: 0, tv_nsec: 0)
            while sigtimedwait(&pipeSignal, nil, &now) < 0 && errno == EINTR {}
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }
    return try body()
}

/// Blocks SIGPIPE on the calling thread for good: for the library's own
/// threads, whose writes to a server that went away must fail with EPIPE
/// rather than end the host process.
package func blockBrokenPipes() {
    var pipeSignal = sigset_t()
    sigemptyset(&pipeSignal)
    sigaddset(&pipeSignal, SIGPIPE)
    pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
}
