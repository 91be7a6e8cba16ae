// The exported functions carry the C names that include/openudid.h declares.
// swift-format-ignore-file: AlwaysUseLowerCamelCase

import COpenUDID
import FoundationEssentials
import Glibc
import OpenUDIDKit
import Synchronization

/// What `openudid_options` stands for: a configuration being put together.
final class Options: Sendable {
    let configuration = Mutex(OpenUDID.Configuration())
}

/// Every `openudid_options` C holds.
let optionsRegistry = Registry<Options>()

/// The options C's pointer stands for.
func options(_ pointer: OpaquePointer?, of function: String) throws(CallFailure) -> Options {
    guard let pointer else { throw CallFailure(.invalidArgument, "\(function): options is NULL; make them with openudid_options_new") }
    guard let options = optionsRegistry.object(pointer) else {
        throw CallFailure(.invalidArgument, "\(function): options \(pointer) were not made by openudid_options_new, or were freed")
    }
    return options
}

/// `openudid_options_new`: options with every default.
@c @implementation
public func openudid_options_new(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    status { () throws(CallFailure) in
        let out = try required(out, "out", of: "openudid_options_new")
        out.pointee = optionsRegistry.register(Options())
    }
}

/// `openudid_options_free`: frees options; NULL and unknown pointers are ignored.
@c @implementation
public func openudid_options_free(_ options: OpaquePointer?) {
    _ = optionsRegistry.remove(options)
}

/// `openudid_options_set_display`: the X display; NULL for `$DISPLAY`.
@c @implementation
public func openudid_options_set_display(_ pointer: OpaquePointer?, _ display: UnsafePointer<CChar>?) -> Int32 {
    setOption(pointer, "openudid_options_set_display") { configuration, function throws(CallFailure) in
        configuration.display = try text(display, "display", of: function)
    }
}

/// `openudid_options_set_selections`: whether to use the X display at all.
@c @implementation
public func openudid_options_set_selections(_ pointer: OpaquePointer?, _ enabled: Int32) -> Int32 {
    setOption(pointer, "openudid_options_set_selections") { configuration, _ in configuration.usesSelections = enabled != 0 }
}

/// `openudid_options_set_namespace`: a namespace of the app's own; NULL for none.
@c @implementation
public func openudid_options_set_namespace(_ pointer: OpaquePointer?, _ ns: UnsafePointer<CChar>?) -> Int32 {
    setOption(pointer, "openudid_options_set_namespace") { configuration, function throws(CallFailure) in
        let namespace = try text(ns, "ns", of: function)
        if let namespace, !StoragePaths.isValidNamespace(namespace) {
            throw CallFailure(.invalidNamespace, StoragePathsError(.invalidNamespace(namespace)).description)
        }
        configuration.namespace = namespace
    }
}

/// `openudid_options_set_mirror`: where the vendor mirror lives.
@c @implementation
public func openudid_options_set_mirror(_ pointer: OpaquePointer?, _ mirror: openudid_mirror) -> Int32 {
    setOption(pointer, "openudid_options_set_mirror") { configuration, _ throws(CallFailure) in
        switch mirror {
        case OPENUDID_MIRROR_AUTOMATIC: configuration.mirror = .automatic
        case OPENUDID_MIRROR_SECRET_SERVICE: configuration.mirror = .secretService
        case OPENUDID_MIRROR_FILE: configuration.mirror = .file
        case OPENUDID_MIRROR_NONE: configuration.mirror = .none
        default:
            throw CallFailure(
                .invalidArgument,
                "openudid_options_set_mirror: \(Int32(bitPattern: mirror.rawValue)) is not an openudid_mirror; "
                    + "use OPENUDID_MIRROR_AUTOMATIC, _SECRET_SERVICE, _FILE or _NONE")
        }
    }
}

/// `openudid_options_set_policy`: what to do when the app's value disagrees with the consensus.
@c @implementation
public func openudid_options_set_policy(_ pointer: OpaquePointer?, _ policy: openudid_policy) -> Int32 {
    setOption(pointer, "openudid_options_set_policy") { configuration, _ throws(CallFailure) in
        switch policy {
        case OPENUDID_POLICY_FOLLOW_CONSENSUS: configuration.policy = .followConsensus
        case OPENUDID_POLICY_KEEP_LOCAL: configuration.policy = .keepLocal
        default:
            throw CallFailure(
                .invalidArgument,
                "openudid_options_set_policy: \(Int32(bitPattern: policy.rawValue)) is not an openudid_policy; "
                    + "use OPENUDID_POLICY_FOLLOW_CONSENSUS or OPENUDID_POLICY_KEEP_LOCAL")
        }
    }
}

/// `openudid_options_set_consent_required`: take part only once the user consented.
@c @implementation
public func openudid_options_set_consent_required(_ pointer: OpaquePointer?, _ required: Int32) -> Int32 {
    setOption(pointer, "openudid_options_set_consent_required") { configuration, _ in
        configuration.requiresConsent = required != 0
    }
}

/// Changes the configuration of the options `pointer` names, for the C function
/// `function`, under the options' lock.
private func setOption(
    _ pointer: OpaquePointer?, _ function: String,
    _ change: (inout OpenUDID.Configuration, String) throws(CallFailure) -> Void
) -> Int32 {
    status { () throws(CallFailure) in
        let options = try options(pointer, of: function)
        try options.configuration.withLock { configuration throws(CallFailure) in try change(&configuration, function) }
    }
}
