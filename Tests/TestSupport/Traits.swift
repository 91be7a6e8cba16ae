import DesktopSandbox
import Testing

extension Trait where Self == ConditionTrait {
    /// Runs a suite only where Xvfb is installed; elsewhere the suite is skipped and says why,
    /// instead of one missing server taking the whole run down.
    public static var requiresXvfb: Self {
        .enabled(
            if: DesktopSandbox.Tools.find("Xvfb") != nil,
            "needs Xvfb for a private X server; install it with `apt-get install xvfb` (scripts/bootstrap does)")
    }
}
