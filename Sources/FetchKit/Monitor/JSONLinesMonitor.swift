import Foundation

/// The structured log (SPEC §4): one JSON object a line, with `ts` (RFC 3339, UTC, milliseconds),
/// `level`, `event` and `run_id` on every line, `job` on job events, and `method`, `url` and
/// `attempt` on request events. Messages are fixed event names; details are fields. URLs and
/// messages pass through the redactor again before they are written.
public final class JSONLinesMonitor: EventMonitor {
    private let writer: LogWriter
    private let redactor: Redactor
    private let runID = LockedBox("")

    public init(writer: LogWriter, redactor: Redactor) {
        self.writer = writer
        self.redactor = redactor
    }

    // MARK: - Events

    public func runDidStart(_ run: RunInfo) {
        runID.withLock { $0 = run.id }
        var line = start("info", "run.started")
        line.int("jobs", run.jobs)
        line.int("concurrency", run.concurrency)
        emit(line)
    }

    public func jobDidStart(_ job: String) {
        var line = start("info", "job.started")
        line.string("job", job)
        emit(line)
    }

    public func jobDidFinish(_ result: JobResult) {
        var line = start(result.outcome == .failed ? "error" : "info", "job.finished")
        line.string("job", result.job)
        line.string("outcome", result.outcome.rawValue)
        if let error = result.error {
            line.string("error", error.code.rawValue)
            line.string("message", redactor.redact(error.message))
            if let url = error.url { line.string("url", redactor.redact(url)) }
        }
        if let status = result.status { line.int("status", status) }
        if result.outcome != .skipped {
            line.int("bytes", result.bytes)
            line.int("attempts", result.attempts)
            line.int("duration_ms", result.duration.milliseconds)
        }
        if let reason = result.reason { line.string("reason", reason) }
        // A 304 or a stale stand-in (a hit says so in its outcome, `cached`).
        if let cache = result.cache, cache != .miss, result.outcome != .cached { line.string("cache", cache.rawValue) }
        emit(line)
    }

    public func requestDidResume(_ request: RequestInfo) {
        emit(requestLine("debug", "request.started", request))
    }

    public func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics) {
        // A stale response standing in for a failure is a warning: the data may be old.
        var line = requestLine(metrics.cache == .stale ? "warn" : "info", "request.finished", request)
        line.int("status", metrics.status)
        line.int("bytes", metrics.bytes)
        line.int("duration_ms", metrics.duration.milliseconds)
        line.string("cache", metrics.cache.rawValue)
        if let version = metrics.httpVersion { line.string("http_version", version) }
        if let hidden = metrics.hiddenError {
            line.string("error", hidden.code.rawValue)
            line.string("message", redactor.redact(hidden.message))
        }
        emit(line)
    }

    public func responseCacheDidReport(_ problem: CacheProblem) {
        var line = start("warn", "cache.warning")
        line.string("path", redactor.redact(problem.path))
        line.string("message", redactor.redact(problem.message))
        emit(line)
    }

    public func networkWasLost() {
        emit(start("warn", "network.lost"))
    }

    public func networkWasRestored(after down: Duration) {
        var line = start("info", "network.restored")
        line.int("down_ms", down.milliseconds)
        emit(line)
    }

    public func networkMonitorDidFail(_ message: String) {
        var line = start("warn", "network.warning")
        line.string("message", message)
        emit(line)
    }

    public func request(_ request: RequestInfo, didFailWithError error: FetchError) {
        var line = requestLine("warn", "request.failed", request)
        line.string("error", error.code.rawValue)
        line.string("message", redactor.redact(error.message))
        if let status = error.status { line.int("status", status) }
        emit(line)
    }

    public func requestIsRetrying(_ request: RequestInfo, retry: RetryInfo) {
        var line = requestLine("warn", "request.retrying", request)
        line.string("reason", retry.reason)
        line.int("delay_ms", retry.delay.milliseconds)
        if let retryAfter = retry.retryAfter { line.number("retry_after", retryAfter.seconds) }
        emit(line)
    }

    public func authenticatorDidRefresh(service: String, reason: String) {
        var line = start("info", "auth.refreshed")
        line.string("service", service)
        line.string("reason", reason)
        emit(line)
    }

    public func downloadDidResume(job: String?, offset: Int64) {
        var line = start("info", "download.resumed")
        if let job { line.string("job", job) }
        line.int("offset", offset)
        line.string("reason", "partial file on disk")
        emit(line)
    }

    public func downloadDidSplit(job: String?, segments: Int, total: Int64, done: Int64) {
        var line = start("info", "download.segmented")
        if let job { line.string("job", job) }
        line.int("segments", segments)
        line.int("total", total)
        line.int("done", done)
        emit(line)
    }

    public func downloadDidRestart(job: String?, offset: Int64, reason: String) {
        var line = start("warn", "download.restarted")
        if let job { line.string("job", job) }
        line.int("offset", offset)
        line.string("reason", reason)
        emit(line)
    }

    public func downloadDidVerify(job: String?, algorithm: String, digest: String, bytes: Int64) {
        var line = start("info", "download.verified")
        if let job { line.string("job", job) }
        line.string(algorithm, digest)
        line.int("bytes", bytes)
        emit(line)
    }

    public func paginationDidFetchPage(job: String, page: Int, records: Int?) {
        var line = start("info", "pagination.page")
        line.string("job", job)
        line.int("page", page)
        if let records { line.int("records", records) }
        emit(line)
    }

    public func paginationDidResume(job: String, page: Int) {
        var line = start("info", "pagination.resumed")
        line.string("job", job)
        line.int("page", page)
        emit(line)
    }

    public func paginationDidStop(job: String, page: Int, reason: String) {
        var line = start("warn", "pagination.stopped")
        line.string("job", job)
        line.int("page", page)
        line.string("reason", reason)
        emit(line)
    }

    public func runDidFinish(_ summary: RunSummary) {
        var line = start(summary.exitStatus == .success ? "info" : "error", "run.finished")
        line.int("succeeded", summary.count(.succeeded))
        line.int("failed", summary.count(.failed))
        line.int("skipped", summary.count(.skipped))
        line.int("up_to_date", summary.count(.upToDate))
        line.int("cached", summary.count(.cached))
        line.int("cache_hits", summary.count(cache: .hit))
        line.int("cache_revalidated", summary.count(cache: .revalidated))
        line.int("cache_stale", summary.count(cache: .stale))
        line.int("cache_bytes", summary.cacheBytes)
        line.int("duration_ms", summary.duration.milliseconds)
        line.int("bytes", summary.bytes)
        if let stop = summary.stop { line.string("stopped", stop.rawValue) }
        emit(line)
        writer.flush()
    }

    // MARK: - Lines

    private func start(_ level: String, _ event: String) -> JSONLine {
        var line = JSONLine()
        line.string("ts", LogFormatting.timestamp())
        line.string("level", level)
        line.string("event", event)
        line.string("run_id", runID.withLock { $0 })
        return line
    }

    private func requestLine(_ level: String, _ event: String, _ request: RequestInfo) -> JSONLine {
        var line = start(level, event)
        if let job = request.job { line.string("job", job) }
        line.string("method", request.method.rawValue)
        line.string("url", redactor.redact(request.url))
        line.int("attempt", request.attempt)
        return line
    }

    private func emit(_ line: JSONLine) {
        writer.write(line.text + "}\n")
    }
}

/// A JSON object built field by field, in order.
struct JSONLine {
    private(set) var text = "{"
    private var isEmpty = true

    private mutating func key(_ name: String) {
        if !isEmpty { text += "," }
        isEmpty = false
        text += "\"" + name + "\":"
    }

    mutating func string(_ name: String, _ value: String) {
        key(name)
        text += JSONText.quote(value, escapeSlash: false)
    }

    mutating func int(_ name: String, _ value: some BinaryInteger) {
        key(name)
        text += String(value)
    }

    mutating func number(_ name: String, _ value: Double) {
        key(name)
        text += JSONText.number((value * 1000).rounded() / 1000)
    }
}
