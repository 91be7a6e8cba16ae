import Foundation

/// Whether this test process (and so the tools built with it) runs under
/// AddressSanitizer or ThreadSanitizer.
public let underSanitizer: Bool = {
    let me = dlopen(nil, RTLD_NOW)
    return dlsym(me, "__asan_init") != nil || dlsym(me, "__tsan_init") != nil
}()

/// The resident set size of process `pid`, in KiB.
public func residentKiB(_ pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return nil }
    return Int(line.split(separator: " ").dropFirst().first ?? "")
}

/// The CPU time process `pid` has used, user and system, in clock ticks (1/100 s).
public func cpuTicks(_ pid: Int32) -> Int? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let afterName = stat.lastIndex(of: ")")
    else { return nil }
    // Fields after the name: state is the 3rd of the line; utime and stime the 14th and 15th.
    let fields = stat[stat.index(after: afterName)...].split(separator: " ")
    guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
    return user + system
}

/// Samples a process's resident memory every 50 ms until stopped, keeping the peak.
public final class RSSSampler: @unchecked Sendable {
    // `highest` and `running` are guarded by `lock`.
    private let lock = NSLock()
    private var highest = 0
    private var running = true

    public init(pid: Int32) {
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                if let size = residentKiB(pid) { lock.withLock { highest = Swift.max(highest, size) } }
                usleep(50_000)
            }
        }
    }

    public func stop() { lock.withLock { running = false } }

    /// The largest resident size seen, in KiB.
    public var peak: Int { lock.withLock { highest } }
}
