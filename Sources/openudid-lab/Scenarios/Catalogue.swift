/// The scenarios of the lab, in the order the table shows them.
///
/// Each runs on fresh machines, so what one leaves behind cannot colour the next.
enum Catalogue {
    private static let notes = LabApp.notes, photos = LabApp.photos, chess = LabApp.chess
    private static let one = LabApp.groupOne, two = LabApp.groupTwo

    /// The key of the scenario of the classic four events, which tables show on its own.
    static let seedKey = "seed"

    /// The keys of the two scenarios that measure the population's events: on a
    /// desktop whose apps are not sandboxed, and on one whose apps all are.
    static let lifeKeys = (plain: "life", sandboxed: "life-sandboxed")

    /// Every scenario.
    static let scenarios: [Scenario] = [
        Scenario(
            key: seedKey, title: "The four events",
            purpose:
                "one app through the four events of the classic comparison: first run, second run, uninstall and reinstall, reboot",
            steps: [
                Step(key: "first-run", label: "1st run", title: "first run", actions: [.start([notes])]),
                Step(key: "second-run", label: "2nd run", title: "second run", actions: [.stop([notes]), .start([notes])]),
                Step(
                    key: "reinstall", label: "reinstall", title: "uninstall and reinstall",
                    actions: [.remove([notes]), .start([notes])]),
                Step(key: "reboot", label: "reboot", title: "reboot", actions: [.stop([notes]), .restartXServer, .start([notes])])
            ], isQuick: true),
        Scenario(
            key: "everyday", title: "Everyday use",
            purpose: "runs, restarts, a reboot and a reinstall: what survives the ordinary life of a desktop",
            steps: [
                Step(key: "first-run", label: "1st run", title: "notes starts (first run)", actions: [.start([notes])]),
                Step(key: "others-start", label: "others", title: "photos and chess start", actions: [.start([photos, chess])]),
                Step(
                    key: "second-run", label: "2nd run", title: "second run: all quit and start again",
                    actions: [.stop(one), .start(one)]),
                Step(key: "app-restart", label: "restart", title: "notes restarts", actions: [.stop([notes]), .start([notes])]),
                Step(
                    key: "reboot", label: "reboot", title: "reboot (X server restarted)",
                    actions: [.stop(one), .restartXServer, .start(one)]),
                Step(
                    key: "reinstall", label: "reinstall", title: "photos removed and reinstalled",
                    actions: [.remove([photos]), .start([photos])])
            ], isQuick: true),
        Scenario(
            key: "break", title: "Every app removed",
            purpose: "the original OpenUDID's break: once every participating app is gone, so is the identifier",
            steps: [
                Step(key: "apps-start", label: "start", title: "notes, photos and chess start", actions: [.start(one)]),
                Step(
                    key: "all-removed", label: "all gone", title: "all removed, then notes reinstalled",
                    actions: [.remove(one), .start([notes])]),
                Step(key: "others-return", label: "back", title: "photos and chess reinstalled", actions: [.start([photos, chess])])
            ], isQuick: true),
        Scenario(
            key: "mirror", title: "A vendor's mirror",
            purpose: "after every app is gone, an app of the same vendor gets the identifier back, another vendor's does not",
            steps: [
                Step(key: "notes-starts", label: "notes", title: "notes starts", actions: [.start([notes])]),
                Step(
                    key: "other-vendor", label: "chess", title: "notes removed; chess (another vendor) installed",
                    actions: [.remove([notes]), .start([chess])]),
                Step(
                    key: "same-vendor", label: "photos", title: "chess removed; photos (notes' vendor) installed",
                    actions: [.remove([chess]), .start([photos])])
            ], isQuick: true),
        Scenario(
            key: "reset", title: "Device reset",
            purpose:
                "erasing the user's content and settings ends every identifier but the hardware's and the machine id's; installing the system afresh spares only the hardware's",
            steps: [
                Step(key: "apps-start", label: "start", title: "notes, photos and chess start", actions: [.start(one)]),
                Step(
                    key: "erase", label: "erase", title: "all content and settings erased (the system stays), apps installed again",
                    actions: [.stop(one), .eraseContent, .start(one)]),
                Step(
                    key: "reset", label: "reset", title: "device reset with a fresh system (new machine id), apps installed again",
                    actions: [.stop(one), .resetDevice, .start(one)])
            ], isQuick: true),
        Scenario(
            key: "opt-out", title: "Opting out",
            purpose: "an app that opts out reports zeros; the others keep their identifier",
            steps: [
                Step(key: "apps-start", label: "start", title: "notes, photos and chess start", actions: [.start(one)]),
                Step(
                    key: "opt-out", label: "opt out", title: "chess opts out (and restarts)",
                    actions: [.stop([chess]), .optOut(chess), .start([chess])]),
                Step(
                    key: "opt-in", label: "opt in", title: "chess opts back in (and restarts)",
                    actions: [.stop([chess]), .optOut(chess, false), .start([chess])])
            ], isQuick: false),
        Scenario(
            key: "meet", title: "Two groups meet",
            purpose:
                "two groups that formed apart come together on one display: apps that keep files hold their own value against records that arrive over the display alone, as they would against a forger",
            steps: [
                Step(key: "group-one", label: "group 1", title: "group one (notes, photos, chess) starts here", actions: [.start(one)]),
                Step(
                    key: "group-two", label: "group 2", title: "group two (sketch, maps) starts on another machine",
                    actions: [.start(two, .apart)]),
                Step(
                    key: "meet", label: "meet", title: "group two's apps open on this display",
                    actions: [.stop(two), .start(two, .visiting)])
            ], isQuick: false),
        Scenario(
            key: "sandbox", title: "Sandboxed apps",
            purpose:
                "each app in a sandbox with its own data directory, as Flatpak arranges: with the X11 socket they still meet; without it a newcomer finds no one",
            steps: [
                Step(
                    key: "with-x11", label: "X11", title: "notes, photos and chess start, each sandboxed with the X11 socket",
                    actions: [.start(one, .sandboxed)]),
                Step(
                    key: "without-x11", label: "no X11", title: "all quit and start again, sandboxed without the X11 socket",
                    actions: [.stop(one), .start(one, .sandboxedWithoutX11)]),
                Step(
                    key: "reinstall", label: "reinstall", title: "photos removed and reinstalled, sandboxed without the X11 socket",
                    actions: [.remove([photos]), .start([photos], .sandboxedWithoutX11)]),
                Step(
                    key: "opt-out-all", label: "opt out", title: "the user opts out of OpenUDID for every app (apps restart)",
                    actions: [.stop(one), .optOutEverywhere(), .start(one, .sandboxedWithoutX11)])
            ], isQuick: true),
        Scenario(
            key: "no-x-server", title: "No X server",
            purpose: "a Wayland session without Xwayland: no selections at all; the file slots and the mirror are all that is left",
            steps: [
                Step(
                    key: "first-run", label: "1st run", title: "notes, photos and chess start with no X server",
                    actions: [.start(one, .noXServer)]),
                Step(
                    key: "second-run", label: "2nd run", title: "second run: all quit and start again",
                    actions: [.stop(one), .start(one, .noXServer)]),
                Step(
                    key: "all-removed", label: "all gone", title: "all removed, then notes reinstalled",
                    actions: [.remove(one), .start([notes], .noXServer)])
            ], isQuick: true),
        Scenario(
            key: "user-resets", title: "The user resets",
            purpose:
                "what the user can do about each identifier: reset the advertising identifier, limit ad tracking, reset OpenUDID's identifier, opt out of OpenUDID for every app",
            steps: [
                Step(key: "apps-start", label: "start", title: "notes, photos and chess start", actions: [.start(one)]),
                Step(
                    key: "ad-reset", label: "ad reset", title: "the user resets the advertising identifier", actions: [.resetAdvertisingID]),
                Step(key: "limit-tracking", label: "limit", title: "the user limits ad tracking", actions: [.limitAdTracking()]),
                Step(
                    key: "openudid-reset", label: "reset", title: "the user resets the OpenUDID identifier (apps keep running)",
                    actions: [.resetOpenUDID]),
                Step(
                    key: "opt-out-all", label: "opt out", title: "the user opts out of OpenUDID for every app (apps restart)",
                    actions: [.stop(one), .optOutEverywhere(), .start(one)])
            ], isQuick: true),
        Scenario(
            key: lifeKeys.plain, title: "A desktop's events",
            purpose:
                "every event of the population model (docs/lab/population.md), one step each: what it does to the apps that look after it",
            steps: life(.here), isQuick: true),
        Scenario(
            key: lifeKeys.sandboxed, title: "A sandboxed desktop's events",
            purpose: "the same events with every app sandboxed without the X11 socket", steps: life(.sandboxedWithoutX11),
            isQuick: true)
    ]

    /// Every event the population model draws, in an order that gives each its
    /// situation (other apps installed or none, the vendor known or not), with
    /// every app started at `place`.
    private static func life(_ place: Place) -> [Step] {
        let sketch = LabApp.sketch
        let maps = LabApp.maps
        return [
            Step(key: "first-run", label: "1st run", title: "notes starts on a fresh machine", actions: [.start([notes], place)]),
            Step(
                key: "install", label: "install", title: "photos (notes' vendor) and chess (another vendor) installed",
                actions: [.start([photos, chess], place)]),
            Step(key: "restart", label: "restart", title: "notes restarts", actions: [.stop([notes]), .start([notes], place)]),
            Step(key: "relaunch", label: "relaunch", title: "all quit and start again", actions: [.stop(one), .start(one, place)]),
            Step(
                key: "reboot", label: "reboot", title: "reboot (X server restarted)",
                actions: [.stop(one), .restartXServer, .start(one, place)]),
            Step(
                key: "reinstall-same-vendor", label: "reinst. 1", title: "photos removed and reinstalled beside notes",
                actions: [.remove([photos]), .start([photos], place)]),
            Step(
                key: "reinstall-other-vendor", label: "reinst. 2", title: "chess removed and reinstalled (no other app of its vendor)",
                actions: [.remove([chess]), .start([chess], place)]),
            Step(
                key: "reset", label: "reset", title: "the user resets the advertising and the OpenUDID identifiers",
                actions: [.resetAdvertisingID, .resetOpenUDID]),
            Step(
                key: "keyring-lost", label: "keyring", title: "the keyring is lost; notes restarts",
                actions: [.stop([notes]), .loseKeyring, .start([notes], place)]),
            Step(
                key: "alone-same-app", label: "alone 1", title: "all removed, then notes reinstalled",
                actions: [.remove(one), .start([notes], place)]),
            Step(
                key: "alone-new-vendor", label: "alone 2", title: "notes removed; sketch (a vendor never installed) installed",
                actions: [.remove([notes]), .start([sketch], place)]),
            Step(
                key: "alone-same-vendor", label: "alone 3", title: "sketch removed; maps (sketch's vendor) installed",
                actions: [.remove([sketch]), .start([maps], place)]),
            Step(
                key: "keyring-lost-alone", label: "lost alone", title: "maps removed; the keyring is lost; sketch reinstalled",
                actions: [.remove([maps]), .loseKeyring, .start([sketch], place)]),
            Step(
                key: "opt-out", label: "opt out", title: "the user limits ad tracking and opts out of OpenUDID (sketch restarts)",
                actions: [.limitAdTracking(), .stop([sketch]), .optOutEverywhere(), .start([sketch], place)])
        ]
    }
}
