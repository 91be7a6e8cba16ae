import DesktopSandbox
import Testing

/// A private weston, headless, with Xwayland on an X display of its own (see DesktopSandbox's `Weston`).
public typealias PrivateWeston = Weston

extension Trait where Self == ConditionTrait {
    /// Runs a suite only where weston and Xwayland are installed; elsewhere the
    /// suite is skipped and says why. Where they are installed, a compositor that
    /// does not start fails the test with weston's log.
    public static var requiresWeston: Self {
        .enabled(
            if: DesktopSandbox.Tools.find("weston") != nil && DesktopSandbox.Tools.find("Xwayland") != nil,
            "needs weston and Xwayland for a private Wayland session; install them with `apt-get install weston xwayland` (scripts/bootstrap does)"
        )
    }
}
