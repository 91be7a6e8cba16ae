/// The configuration of a private D-Bus session bus for tests, the lab and the benchmark.
///
/// It listens in `socketDirectory` and activates services only from
/// `serviceDirectory` (meant to be empty), so the system's service files can
/// never start a daemon, such as the user's own gnome-keyring, behind the
/// caller's back.
///
/// - Parameters:
///   - socketDirectory: Where the bus creates its socket.
///   - serviceDirectory: The only directory searched for activatable services.
/// - Returns: The XML for `dbus-daemon --config-file`.
public func privateSessionBusConfiguration(socketDirectory: String, serviceDirectory: String) -> String {
    """
    <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
    <busconfig>
      <type>session</type>
      <listen>unix:dir=\(socketDirectory)</listen>
      <auth>EXTERNAL</auth>
      <servicedir>\(serviceDirectory)</servicedir>
      <policy context="default">
        <allow send_destination="*" eavesdrop="true"/>
        <allow eavesdrop="true"/>
        <allow own="*"/>
      </policy>
    </busconfig>
    """
}
