import DesktopSandbox
import Testing

/// A private Wayland compositor, headless, with Xwayland on an X display of its own (see DesktopSandbox's `Compositor`).
public typealias PrivateCompositor = Compositor

extension Compositor {
    /// Starts a compositor of `kind` for a test. Where it is not installed the
    /// test (in a parameterized test, its case) is skipped, saying what is
    /// missing; where it is installed, one that does not start fails the test
    /// with its log.
    public static func forTest(_ kind: Kind) throws -> Compositor {
        if let missing = kind.missing { try skip("\(kind) cannot run here: \(missing)") }
        return try Compositor(kind)
    }
}

/// Ends the running test (in a parameterized test, its case) as skipped, and
/// says why on standard output, where the test runner's summary does not.
public func skip(_ why: String) throws -> Never {
    print("skipped: \(why)")
    try Test.cancel(Comment(rawValue: why))
}
