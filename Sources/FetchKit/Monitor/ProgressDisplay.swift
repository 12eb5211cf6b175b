import Foundation

/// A one-line live display on a terminal: jobs done / total, jobs a second, the time left, failures
/// by error code, bytes and their rate, redrawn at most ten times a second from events (never from a
/// timer that could hold up a transfer); a job costs a few counter updates, so a million-job run
/// draws the same line. Other lines are printed above it with `printAbove`.
public final class ProgressDisplay: EventMonitor {
    private struct Counters {
        var total = 0
        var done = 0
        var failed = 0
        var skipped = 0
        /// Failed jobs by error code (a handful of codes, whatever the run's size).
        var failures: [String: Int] = [:]
        var bytes: Int64 = 0
        var started = ContinuousClock.now
        var lastDraw: ContinuousClock.Instant?
        var active = false
        /// The network monitor lost the network: the jobs are waiting for it.
        var offline = false
    }

    private let writer: LogWriter
    private let counters = LockedBox(Counters())
    private let width: Int

    public init(writer: LogWriter, width: Int = 24) {
        self.writer = writer
        self.width = width
    }

    /// Writes `line` (newline included) above the progress line.
    public func printAbove(_ line: String) {
        let status = counters.withLock { c -> String? in c.active ? render(c) : nil }
        writer.write(status.map { "\r\u{1B}[2K" + line + $0 } ?? line)
    }

    public func runDidStart(_ run: RunInfo) {
        counters.withLock {
            $0 = Counters()
            $0.total = run.jobs
            $0.active = true
        }
        redraw(force: true)
    }

    public func request(_ request: RequestInfo, didReceiveBytes count: Int) {
        counters.withLock { $0.bytes += Int64(count) }
        redraw(force: false)
    }

    public func jobDidFinish(_ result: JobResult) {
        counters.withLock {
            $0.done += 1
            if result.outcome == .failed {
                $0.failed += 1
                $0.failures[result.error?.code.rawValue ?? "failed", default: 0] += 1
            }
            if result.outcome == .skipped { $0.skipped += 1 }
        }
        redraw(force: false)
    }

    public func networkWasLost() {
        counters.withLock { $0.offline = true }
        redraw(force: true)
    }

    public func networkWasRestored(after down: Duration) {
        counters.withLock { $0.offline = false }
        redraw(force: true)
    }

    public func runDidFinish(_ summary: RunSummary) {
        counters.withLock { $0.active = false }
        writer.write("\r\u{1B}[2K")
        writer.flush()
    }

    private func redraw(force: Bool) {
        let text = counters.withLock { c -> String? in
            let now = ContinuousClock.now
            guard c.active, force || c.lastDraw.map({ now - $0 >= .milliseconds(100) }) ?? true else { return nil }
            c.lastDraw = now
            return render(c)
        }
        if let text { writer.write("\r\u{1B}[2K" + text) }
    }

    private func render(_ c: Counters) -> String {
        let fraction = c.total == 0 ? 1 : min(1, Double(c.done) / Double(c.total))
        let filled = Int((fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "=", count: filled) + (filled < width ? ">" : "") + String(repeating: " ", count: max(0, width - filled - 1))
        let elapsed = max((ContinuousClock.now - c.started).seconds, 0.001)
        var text = "[\(bar)] \(c.done)/\(c.total) jobs · " + Self.rateAndETA(done: c.done, total: c.total, elapsed: elapsed)
        if c.failed > 0 { text += " · \(c.failed) failed (\(Self.byCode(c.failures)))" }
        if c.skipped > 0 { text += " · \(c.skipped) skipped" }
        text += " · \(LogFormatting.bytes(c.bytes)) · \(LogFormatting.bytes(Int64(Double(c.bytes) / elapsed)))/s"
        if c.offline { text += " · waiting for network" }
        return text
    }

    /// `2,310 jobs/s · ETA 7m8s` (no ETA until a job is done, or once all are).
    static func rateAndETA(done: Int, total: Int, elapsed: Double) -> String {
        let rate = Double(done) / max(elapsed, 0.001)
        var text = "\(Int(rate.rounded())) jobs/s"
        if done > 0, total > done {
            text += " · ETA " + eta(seconds: Int((Double(total - done) / rate).rounded(.up)))
        }
        return text
    }

    /// `45s`, `7m08s`, `2h05m`: the time left, to the second while it is short.
    static func eta(seconds: Int) -> String {
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m" + String(format: "%02ds", seconds % 60) }
        return "\(seconds / 3600)h" + String(format: "%02dm", seconds % 3600 / 60)
    }

    /// `timeout 9, status 3`: the codes, most frequent first, at most three and a count of the rest.
    static func byCode(_ failures: [String: Int]) -> String {
        let sorted = failures.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        var parts = sorted.prefix(3).map { "\($0.key) \($0.value)" }
        if sorted.count > 3 { parts.append("\(sorted.count - 3) more codes") }
        return parts.joined(separator: ", ")
    }
}
