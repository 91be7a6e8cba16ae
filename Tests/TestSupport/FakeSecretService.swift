import DesktopSandbox
import Foundation

/// A broken Secret Service on a private session bus, for one test: a small GIO
/// program (Python, PyGObject) that owns `org.freedesktop.secrets` and answers
/// every call wrongly, dies at its first call, or never answers.
public final class FakeSecretService: Sendable {
    /// How the service misbehaves.
    public enum Behaviour: String, Sendable {
        /// Every method answers a string where an object path or a list is due. (Its
        /// one property, `Collections`, is a list of none, as its type says: GIO
        /// would print a warning for a wrong type before libsecret saw it.)
        case garbage
        /// It quits in the middle of its first call, without answering.
        case vanishOnCall = "vanish-on-call"
        /// It takes calls and never answers them.
        case silent
    }

    /// The private HOME and XDG directories.
    public let home: PrivateHome
    private let bus: SessionBus
    private let service: ChildProcess

    /// The bus address, as `DBUS_SESSION_BUS_ADDRESS` holds it.
    public var address: String { bus.address }

    /// Starts a bus and the service, and waits until the service owns its name.
    ///
    /// - Throws: `HarnessError` when no python3 with PyGObject is installed
    ///   (scripts/bootstrap installs python3-gi) or the service does not come up.
    public init(_ behaviour: Behaviour, timeout: TimeInterval = 20) throws {
        home = try PrivateHome()
        bus = try SessionBus(home: home.home, timeout: timeout)
        // PyGObject is installed for the system's python3, which a python3 earlier on PATH may not see.
        let candidates = [try? Tools.find("python3").path, "/usr/bin/python3"].compactMap { $0 }
        guard
            let python = candidates.first(where: { candidate in
                (try? DesktopSandbox.runCommand(candidate, ["-c", "import gi"], environment: [:], timeout: 20).status) == 0
            })
        else { throw HarnessError("no python3 with PyGObject (gi) is installed; run scripts/bootstrap") }
        service = try ChildProcess(python, ["-c", Self.script, behaviour.rawValue], environment: bus.environment(), reading: .onDemand)
        guard service.nextLine(timeout: timeout) == "ready" else {
            throw HarnessError("the fake Secret Service did not start: \(service.standardError)")
        }
    }

    /// The name of the next method called on the service (`SearchItems`, ...),
    /// or nil when none is called within `timeout` seconds.
    public func nextCall(timeout: TimeInterval = 20) -> String? {
        guard let line = service.nextLine(timeout: timeout), line.hasPrefix("call ") else { return nil }
        return String(line.dropFirst(5))
    }

    /// The calls the service has taken since the last look, as `Method` or
    /// `Get Property`, in order: what a client cost it, whatever the clock says.
    public func calls() -> [String] {
        var calls: [String] = []
        while let line = service.nextLine(timeout: 0) { calls.append(String(line.dropFirst("call ".count))) }
        return calls
    }

    /// The environment of a process on this bus, plus `extra`.
    public func environment(extra: [String: String] = [:]) -> [String: String] { bus.environment(extra: extra) }

    private static let script = """
        import os, sys
        import gi
        gi.require_version('Gio', '2.0')
        from gi.repository import Gio, GLib
        behaviour = sys.argv[1]
        XML = '''<node><interface name="org.freedesktop.Secret.Service">
         <method name="OpenSession"><arg type="s" direction="in"/><arg type="v" direction="in"/><arg type="s" direction="out"/></method>
         <method name="ReadAlias"><arg type="s" direction="in"/><arg type="s" direction="out"/></method>
         <method name="SearchItems"><arg type="a{ss}" direction="in"/><arg type="s" direction="out"/></method>
         <method name="Unlock"><arg type="ao" direction="in"/><arg type="s" direction="out"/></method>
         <property name="Collections" type="ao" access="read"/>
        </interface></node>'''
        interface = Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0]
        pending = []
        def call(connection, sender, path, name, method, parameters, invocation):
            print('call', method, flush=True)
            if behaviour == 'vanish-on-call': os._exit(0)
            if behaviour == 'silent': pending.append(invocation); return
            invocation.return_value(GLib.Variant('(s)', ('garbage \\u00e9 \\x01',)))
        def get_property(connection, sender, path, name, property):
            print('call Get', property, flush=True)
            return GLib.Variant('ao', [])
        def acquired(connection, name):
            # Silent: without a property getter, GDBus hands property reads to
            # `call` too, which keeps every call pending and answers none.
            getter = None if behaviour == 'silent' else get_property
            connection.register_object('/org/freedesktop/secrets', interface, call, getter, None)
        def owned(connection, name):
            print('ready', flush=True)
        Gio.bus_own_name(Gio.BusType.SESSION, 'org.freedesktop.secrets', Gio.BusNameOwnerFlags.NONE, acquired, owned, None)
        GLib.MainLoop().run()
        """

    deinit {
        service.kill9()
        bus.stop()
    }
}
