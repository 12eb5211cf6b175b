import Foundation

/// The log for people: one line per finished job, retry and failure, as
/// `<ts> <level> <event> key=value …`. With `quiet`, only warnings and errors (what a progress
/// display can't show) are written. A run of more than `jobLinesUpTo` jobs writes no line per job
/// that went well: a `run.progress` line every `progressEvery` (done, total, rate, time left,
/// failures by code, bytes) instead, and still a line per failed job, retry and warning — cron's
/// log of a million-job batch stays readable.
public final class TextLogMonitor: EventMonitor {
    private let output: @Sendable (String) -> Void
    private let redactor: Redactor
    private let quiet: Bool
    /// Runs up to this many jobs get a line per job.
    public static let jobLinesUpTo = 1_000
    /// How often a bigger run's progress line is written.
    public static let progressEvery: Duration = .seconds(10)

    private struct Progress {
        var jobs = JobProgress()
        var bytes: Int64 = 0
        var lastLine = ContinuousClock.now
    }
    private let progress = LockedBox(Progress())

    /// - Parameter output: receives whole lines (newline included).
    public init(redactor: Redactor, quiet: Bool = false, output: @escaping @Sendable (String) -> Void) {
        self.output = output
        self.redactor = redactor
        self.quiet = quiet
    }

    public func runDidStart(_ run: RunInfo) {
        progress.withLock { $0 = Progress(jobs: JobProgress(total: run.jobs)) }
        line("info", "run.started", [("run_id", run.id), ("jobs", "\(run.jobs)"), ("concurrency", "\(run.concurrency)")])
    }

    public func jobDidFinish(_ result: JobResult) {
        let level = result.outcome == .failed ? "error" : "info"
        let (perJob, due) = progress.withLock { p -> (Bool, Progress?) in
            p.jobs.count(result)
            p.bytes += result.bytes
            let now = ContinuousClock.now
            guard p.jobs.total > Self.jobLinesUpTo, now - p.lastLine >= Self.progressEvery else { return (p.jobs.total <= Self.jobLinesUpTo, nil) }
            p.lastLine = now
            return (false, p)
        }
        if let due, !quiet { progressLine(due) }
        if quiet && level == "info" { return }
        if !perJob && level == "info" { return }
        var line = LogLine(level: level, event: "job.finished")
        line.field("job", result.job)
        line.field("outcome", result.outcome.rawValue)
        if let status = result.status { line.field("status", status) }
        if let error = result.error {
            line.field("error", error.code.rawValue)
            line.field("message", redactor.redact(error.message))
            if let url = error.url { line.field("url", redactor.redact(url)) }
        }
        if result.outcome == .succeeded {
            line.field("bytes", result.bytes)
            line.field("duration_ms", result.duration.milliseconds)
        }
        if let cache = result.cache, cache != .miss, result.outcome != .cached { line.field("cache", cache.rawValue) }
        if result.attempts > 1 { line.field("attempts", result.attempts) }
        if let reason = result.reason { line.field("reason", reason) }
        output(line.text)
    }

    private func progressLine(_ p: Progress) {
        let jobs = p.jobs
        let elapsed = jobs.elapsed
        var fields = [("done", "\(jobs.done)"), ("total", "\(jobs.total)"), ("rate", "\(Int(jobs.rate(over: elapsed).rounded()))/s")]
        if let left = jobs.secondsLeft(over: elapsed) { fields.append(("eta", JobProgress.eta(seconds: left))) }
        fields.append(("failed", "\(jobs.failed)"))
        if !jobs.failures.isEmpty { fields.append(("errors", jobs.failuresByCode)) }
        fields.append(("bytes", "\(p.bytes)"))
        line("info", "run.progress", fields)
    }

    public func request(_ request: RequestInfo, didFailWithError error: FetchError) {
        line("warn", "request.failed", requestFields(request) + [("error", error.code.rawValue), ("message", redactor.redact(error.message))])
    }

    /// A stale response stood in for a failure: a warning, since the data may be old.
    public func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics) {
        guard metrics.cache == .stale, let hidden = metrics.hiddenError else { return }
        line("warn", "request.finished", requestFields(request) + [("status", "\(metrics.status)"), ("cache", "stale"),
                                                                   ("error", hidden.code.rawValue), ("message", redactor.redact(hidden.message))])
    }

    public func networkWasLost() {
        line("warn", "network.lost", [])
    }

    public func networkWasRestored(after down: Duration) {
        line("info", "network.restored", [("down_ms", "\(down.milliseconds)")])
    }

    public func networkMonitorDidFail(_ message: String) {
        line("warn", "network.warning", [("message", message)])
    }

    public func responseCacheDidReport(_ problem: CacheProblem) {
        line("warn", "cache.warning", [("path", redactor.redact(problem.path)), ("message", redactor.redact(problem.message))])
    }

    public func requestIsRetrying(_ request: RequestInfo, retry: RetryInfo) {
        var fields = requestFields(request) + [("reason", retry.reason), ("delay_ms", "\(retry.delay.milliseconds)")]
        if let after = retry.retryAfter { fields.append(("retry_after", JSONText.number(after.seconds))) }
        line("warn", "request.retrying", fields)
    }

    public func authenticatorDidRefresh(service: String, reason: String) {
        line("info", "auth.refreshed", [("service", service), ("reason", reason)])
    }

    public func downloadDidResume(job: String?, offset: Int64) {
        line("info", "download.resumed", (job.map { [("job", $0)] } ?? []) + [("offset", "\(offset)")])
    }

    public func downloadDidSplit(job: String?, segments: Int, total: Int64, done: Int64) {
        line("info", "download.segmented", (job.map { [("job", $0)] } ?? []) + [("segments", "\(segments)"), ("total", "\(total)"), ("done", "\(done)")])
    }

    public func downloadDidRestart(job: String?, offset: Int64, reason: String) {
        line("warn", "download.restarted", (job.map { [("job", $0)] } ?? []) + [("offset", "\(offset)"), ("reason", reason)])
    }

    public func paginationDidFetchPage(job: String, page: Int, records: Int?) {
        line("info", "pagination.page", [("job", job), ("page", "\(page)")] + (records.map { [("records", "\($0)")] } ?? []))
    }

    public func paginationDidResume(job: String, page: Int) {
        line("info", "pagination.resumed", [("job", job), ("page", "\(page)")])
    }

    public func paginationDidStop(job: String, page: Int, reason: String) {
        line("warn", "pagination.stopped", [("job", job), ("page", "\(page)"), ("reason", reason)])
    }

    public func downloadDidVerify(job: String?, algorithm: String, digest: String, bytes: Int64) {
        line("info", "download.verified", (job.map { [("job", $0)] } ?? []) + [(algorithm, digest), ("bytes", "\(bytes)")])
    }

    private func requestFields(_ request: RequestInfo) -> [(String, String)] {
        (request.job.map { [("job", $0)] } ?? []) + [("method", request.method.rawValue), ("url", redactor.redact(request.url)),
                                                     ("attempt", "\(request.attempt)")]
    }

    private func line(_ level: String, _ event: String, _ fields: [(String, String)]) {
        if quiet && level == "info" { return }
        var line = LogLine(level: level, event: event)
        for (key, value) in fields { line.field(key, value) }
        output(line.text)
    }
}
