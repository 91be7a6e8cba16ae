import Foundation
import Synchronization

/// A child's standard output, split into lines; read by a thread of its own or on demand.
///
/// The descriptor is closed when the buffer goes, which is after the reading
/// thread's last read: closing it under a reader would let the number be reused.
final class LineBuffer: @unchecked Sendable {
    // `lines`, `partial`, `closed`, `lastLine` and `lastLineAt` are guarded by `condition`.
    private let condition = NSCondition()
    private let continuously: Bool
    let descriptor: Int32
    let stopRequested = Atomic<Bool>(false)
    private var lines: [String] = []
    private var partial: [UInt8] = []
    private(set) var closed = false
    private(set) var lastLine: String?
    private(set) var lastLineAt = Date.distantPast

    init(_ descriptor: Int32, continuously: Bool) {
        self.descriptor = descriptor
        self.continuously = continuously
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        guard continuously else { return }
        let thread = Thread { [self] in
            while !stopRequested.load(ordering: .relaxed) && withLock({ $0.readAvailable() }) {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&poller, 1, 50)
            }
        }
        thread.name = "DesktopSandbox.LineBuffer"
        thread.start()
    }

    func withLock<T>(_ body: (LineBuffer) -> T) -> T {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body(self)
    }

    /// Reads what is there without blocking; false at the end of output. Holds the lock.
    func readAvailable() -> Bool {
        guard !closed else { return false }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &chunk, chunk.count)
            if count > 0 {
                partial += chunk[0..<count]
                while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: partial[..<newline], as: UTF8.self)
                    partial.removeSubrange(...newline)
                    lines.append(line)
                    lastLine = line
                    lastLineAt = Date()
                }
            } else if count < 0 && errno == EINTR {
                continue
            } else if count < 0 && errno == EAGAIN {
                return true
            } else {
                closed = true
                return false
            }
        }
    }

    /// Takes the lines read so far (reading first when read on demand), and with `partial` an unfinished last one.
    func takeLines(partial withPartial: Bool) -> [String] {
        if !continuously { _ = readAvailable() }
        defer {
            lines.removeAll()
            if withPartial { partial.removeAll() }
        }
        return withPartial && !partial.isEmpty ? lines + [String(decoding: partial, as: UTF8.self)] : lines
    }

    /// Every unread byte as text, lines with their newlines, left in place.
    func text() -> String { lines.map { $0 + "\n" }.joined() + String(decoding: partial, as: UTF8.self) }

    /// Takes every unread byte as text, lines with their newlines.
    func takeText() -> String {
        if !continuously { _ = readAvailable() }
        defer {
            lines.removeAll()
            partial.removeAll()
        }
        return lines.map { $0 + "\n" }.joined() + String(decoding: partial, as: UTF8.self)
    }

    func nextLine(timeout: TimeInterval) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if !continuously { _ = readAvailable() }
            if !lines.isEmpty { return lines.removeFirst() }
            guard !closed, Date() < deadline else { return nil }
            wait(until: deadline)
        }
    }

    func waitForEnd(timeout: TimeInterval) {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if !continuously { _ = readAvailable() }
            guard !closed, Date() < deadline else { return }
            wait(until: deadline)
        }
    }

    /// Waits, with the lock held on entry and exit, for the reading thread's news or for the descriptor.
    private func wait(until deadline: Date) {
        if continuously {
            _ = condition.wait(until: deadline)
        } else {
            condition.unlock()
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, Int32(clamping: Int(deadline.timeIntervalSinceNow * 1000) + 1))
            condition.lock()
        }
    }

    deinit { close(descriptor) }
}
