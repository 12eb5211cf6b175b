import Foundation

/// A one-line live display on a terminal: jobs done / total, jobs a second, the time left, failures
/// by error code, bytes and their rate, redrawn at most ten times a second from events (never from a
/// timer that could hold up a transfer); a job costs a few counter updates, so a million-job run
/// draws the same line. Other lines are printed above it with `printAbove`.
public final class ProgressDisplay: EventMonitor {
    private struct Counters {
        var jobs = JobProgress()
        var bytes: Int64 = 0
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
            $0 = Counters(jobs: JobProgress(total: run.jobs))
            $0.active = true
        }
        redraw(force: true)
    }

    public func request(_ request: RequestInfo, didReceiveBytes count: Int) {
        counters.withLock { $0.bytes += Int64(count) }
        redraw(force: false)
    }

    public func jobDidFinish(_ result: JobResult) {
        counters.withLock { $0.jobs.count(result) }
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
        let jobs = c.jobs
        let fraction = jobs.total == 0 ? 1 : min(1, Double(jobs.done) / Double(jobs.total))
        let filled = Int((fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "=", count: filled) + (filled < width ? ">" : "") + String(repeating: " ", count: max(0, width - filled - 1))
        var text = "[\(bar)] \(jobs.done)/\(jobs.total) jobs · " + jobs.rateAndETA()
        if jobs.failed > 0 { text += " · \(jobs.failed) failed (\(jobs.failuresByCode))" }
        if jobs.skipped > 0 { text += " · \(jobs.skipped) skipped" }
        text += " · \(LogFormatting.bytes(c.bytes)) · \(LogFormatting.bytes(Int64(Double(c.bytes) / jobs.elapsed)))/s"
        if c.offline { text += " · waiting for network" }
        return text
    }
}
