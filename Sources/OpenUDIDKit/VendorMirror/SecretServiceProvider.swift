import FoundationEssentials
import Glibc

/// The program that provides the Secret Service, as far as the mirror's messages
/// and erasure reports need to know it: each one locks, confirms and deletes
/// differently.
///
/// Found by the name of the process that owns `org.freedesktop.secrets`; a
/// provider the mirror does not know by name is still used the same way, and
/// named by its process.
package struct SecretServiceProvider: Sendable, Equatable {
    /// The providers whose behaviour the mirror knows (measured, README "Supported").
    package enum Kind: Sendable, Equatable {
        case gnomeKeyring
        case keePassXC
        case kWallet
        case other
    }

    /// Which provider this is.
    package let kind: Kind
    /// Its process's name (`/proc/PID/comm`), when it could be read.
    package let processName: String?

    /// The provider whose process is named `processName` (nil when unknown).
    package init(processName: String?) {
        self.processName = processName
        switch processName {
        case "gnome-keyring-d", "gnome-keyring-daemon": kind = .gnomeKeyring
        case "keepassxc": kind = .keePassXC
        case "kwalletd5", "kwalletd6", "ksecretd": kind = .kWallet
        default: kind = .other
        }
    }

    /// The name of the process with this id, as the kernel keeps it (15 bytes at most).
    static func processName(pid: UInt32) -> String? {
        guard pid > 0, let text = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8) else { return nil }
        let name = String(text.prefix { $0 != "\n" })
        return name.isEmpty ? nil : name
    }

    /// The provider's name in a message: "KeePassXC", "gnome-keyring", "KWallet".
    package var name: String {
        switch kind {
        case .gnomeKeyring: "gnome-keyring"
        case .keePassXC: "KeePassXC"
        case .kWallet: "KWallet"
        case .other: processName.map { "the Secret Service (\($0))" } ?? "the Secret Service"
        }
    }

    /// Whether changing an item's secret keeps the old one (KeePassXC's entry history).
    package var keepsHistory: Bool { kind == .keePassXC }

    /// What the user does to unlock the default collection.
    var unlockRemedy: String {
        switch kind {
        case .gnomeKeyring: "unlock the login keyring (logging in to the desktop usually does) and try again"
        case .keePassXC: "unlock the database in KeePassXC and try again"
        case .kWallet: "open the wallet in KWallet (logging in to Plasma usually does) and try again"
        case .other: "unlock the keyring and try again"
        }
    }

    /// The message for an item the provider keeps from this client although its
    /// collection is unlocked: it asks the user before each client reads it.
    func accessConfirmationMessage(vendor: String, operation: String) -> String {
        switch kind {
        case .keePassXC:
            """
            secret-service: KeePassXC keeps the Secret Service item of \(vendor) from each application until \
            the user allows it (its option "Confirm when passwords are retrieved by clients", on by default), \
            found while \(operation); the library never opens that dialog, so apps of \(vendor) cannot share \
            the identifier through KeePassXC: turn the option off in KeePassXC's settings, \
            Secret Service Integration, or choose the file mirror
            """
        default:
            """
            secret-service: \(name) keeps the Secret Service item of \(vendor) locked for this application \
            although its collection is unlocked, found while \(operation): it asks the user before each \
            application reads it, and the library never opens that dialog; allow applications to read \
            the item in \(name)'s settings, or choose the file mirror
            """
        }
    }

    /// Where the provider keeps copies of the items it was asked to delete, and
    /// how to remove them; nil when it keeps none, or nothing was deleted.
    func keptCopies(of labels: [String]) -> String? {
        guard kind == .keePassXC, !labels.isEmpty else { return nil }
        let items = labels.map { "\"\($0)\"" }.joined(separator: ", ")
        return """
            KeePassXC moved the deleted \(labels.count == 1 ? "entry" : "entries") \(items) to the Recycle Bin \
            of its database, with the earlier values in each entry's history: empty the Recycle Bin in KeePassXC \
            (right-click it, "Empty recycle bin") to remove the identifier for good
            """
    }
}
