import CXlib
import Synchronization

/// Process-wide libX11 error handlers for the text window's connections: a
/// lost server marks the connection lost instead of ending the app, and the
/// errors of other connections go to the handlers installed before (a
/// toolkit's, or libX11's defaults).
///
/// libX11's handlers are global while connections are per object; the registry
/// maps a `Display*` to its state. An example app may install them; the
/// libraries (XSelection, which speaks libxcb) install nothing process-wide.
enum XErrorTrap {
    private struct DisplayState {
        var registration: UInt64
        var lost = false
    }

    private struct Registry {
        var displays: [UInt: DisplayState] = [:]
        var registrations: UInt64 = 0
        var previousErrorHandler: XErrorHandler?
        var previousIOErrorHandler: XIOErrorHandler?
    }

    private static let registry = Mutex(Registry())

    /// Starts tracking `display` and makes sure our handlers are the installed ones.
    ///
    /// - Returns: The registration, which `unregister` needs: once a display is
    ///   closed, the next one opened may get the same address.
    static func register(_ display: OpaquePointer) -> UInt64 {
        let registration = registry.withLock { registry in
            registry.registrations += 1
            registry.displays[UInt(bitPattern: display)] = DisplayState(registration: registry.registrations)
            // A toolkit may have installed its own handlers after ours; put ours
            // back on top and remember theirs for chaining.
            let currentError = XSetErrorHandler(errorHandler)
            if let currentError, !isOurs(currentError) { registry.previousErrorHandler = currentError }
            let currentIO = XSetIOErrorHandler(ioErrorHandler)
            if let currentIO, !isOurs(currentIO) { registry.previousIOErrorHandler = currentIO }
            return registry.registrations
        }
        XSetIOErrorExitHandler(display, ioErrorExitHandler, nil)
        return registration
    }

    /// Stops tracking `display` if it is still the registration `registration`.
    ///
    /// Call it only after `XCloseDisplay` has returned: closing syncs with the
    /// server, and the errors that sync reports (every one, on a lost
    /// connection) must still reach our handlers, not the host's or libX11's
    /// defaults, which exit.
    static func unregister(_ display: OpaquePointer, _ registration: UInt64) {
        registry.withLock { registry in
            let key = UInt(bitPattern: display)
            if registry.displays[key]?.registration == registration {
                registry.displays.removeValue(forKey: key)
            }
        }
    }

    /// Whether the connection was lost (an I/O error was reported for it).
    static func isLost(_ display: OpaquePointer) -> Bool {
        registry.withLock { $0.displays[UInt(bitPattern: display)]?.lost ?? true }
    }

    private static func isOurs(_ handler: XErrorHandler) -> Bool {
        unsafeBitCast(handler, to: UInt.self) == unsafeBitCast(errorHandler, to: UInt.self)
    }

    private static func isOurs(_ handler: XIOErrorHandler) -> Bool {
        unsafeBitCast(handler, to: UInt.self) == unsafeBitCast(ioErrorHandler, to: UInt.self)
    }

    private static let errorHandler: XErrorHandler = { display, event in
        guard let display, let event else { return 0 }
        let key = UInt(bitPattern: display)
        // The text window's own requests fail only when its window is gone,
        // which its loop learns from the events; the error needs no record.
        let previous: XErrorHandler? = XErrorTrap.registry.withLock { registry in
            registry.displays[key] != nil ? nil : registry.previousErrorHandler
        }
        guard let previous else { return 0 }
        return previous(display, event)
    }

    private static let ioErrorHandler: XIOErrorHandler = { display in
        guard let display else { return 0 }
        let key = UInt(bitPattern: display)
        let previous: XIOErrorHandler? = XErrorTrap.registry.withLock { registry in
            guard registry.displays[key] != nil else { return registry.previousIOErrorHandler }
            registry.displays[key]!.lost = true
            return nil
        }
        // Returning lets libX11 call the per-display exit handler, which for our
        // connections does nothing, so the host process lives on.
        guard let previous else { return 0 }
        return previous(display)
    }

    private static let ioErrorExitHandler: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { display, _ in
        guard let display else { return }
        XErrorTrap.registry.withLock { registry in
            registry.displays[UInt(bitPattern: display)]?.lost = true
        }
    }
}
