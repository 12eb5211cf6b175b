import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes log lines to a file descriptor off the transfer path: `write` appends to a buffer and
/// returns at once; a serial queue drains the buffer in large writes, `drainDelay` after the first
/// line of a batch (at once when the buffer reaches `batchBytes`), so a run of thousands of short
/// jobs makes a few writes and thread wake-ups, not one per line. `flush` waits for everything
/// written so far to reach the descriptor; the run flushes before it exits.
public final class LogWriter: Sendable {
    /// How long a line may wait for others to join it: short for a person watching, long enough
    /// to gather the lines of hundreds of small jobs.
    static let drainDelay = DispatchTimeInterval.milliseconds(20)
    /// A buffer this large is written at once.
    static let batchBytes = 64 * 1024

    private let fd: Int32
    private let ownsDescriptor: Bool
    private let queue = DispatchQueue(label: "fetchctl.log-writer")
    private let pending = LockedBox<(bytes: [UInt8], scheduled: Bool, full: Bool)>(([], false, false))

    /// Writes to standard error.
    public static let standardError = LogWriter(fd: STDERR_FILENO, ownsDescriptor: false)
    /// Writes to standard output.
    public static let standardOutput = LogWriter(fd: STDOUT_FILENO, ownsDescriptor: false)

    private init(fd: Int32, ownsDescriptor: Bool) {
        self.fd = fd
        self.ownsDescriptor = ownsDescriptor
    }

    /// Appends to the file at `path`, creating it (a log file from cron keeps every run).
    public convenience init(path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FetchError(.io, "cannot open the log file '\(path)': \(String(cString: strerror(errno)))") }
        self.init(fd: fd, ownsDescriptor: true)
    }

    /// True when the descriptor is a terminal.
    public var isTerminal: Bool { isatty(fd) == 1 }

    /// Queues `text` (a whole line, newline included, or a terminal control sequence).
    public func write(_ text: String) {
        enum Drain { case none, soon, now }
        let drain = pending.withLock { state -> Drain in
            state.bytes.append(contentsOf: text.utf8)
            if state.bytes.count >= Self.batchBytes, !state.full {
                state.full = true
                return .now
            }
            if state.scheduled { return .none }
            state.scheduled = true
            return .soon
        }
        switch drain {
        case .none: break
        case .soon: queue.asyncAfter(deadline: .now() + Self.drainDelay) { self.drain() }
        case .now: queue.async { self.drain() }
        }
    }

    /// Blocks until everything queued so far is written.
    public func flush() {
        queue.sync { drain() }
    }

    /// Flushes and closes a file this writer opened.
    public func close() {
        flush()
        if ownsDescriptor { Glibc.close(fd) }
    }

    private func drain() {
        let bytes = pending.withLock { state -> [UInt8] in
            defer {
                state.bytes.removeAll(keepingCapacity: true)
                state.scheduled = false
                state.full = false
            }
            return state.bytes
        }
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return  // Nowhere left to report a failing log; the run goes on.
                }
                offset += written
            }
        }
    }
}
