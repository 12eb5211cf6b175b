import CoreMetrics
import Foundation
import Prometheus

/// A run's metrics for Prometheus: counted through swift-metrics as the run goes (requests by host
/// and status class, retries, bytes, cache results), completed at its end (jobs by outcome and error
/// code, duration, timestamps, whether it finished) and rendered by swift-prometheus in the text
/// exposition format, for `--metrics-file` (node_exporter's textfile collector) and `--metrics-push`
/// (a Pushgateway).
///
/// Each run has a registry of its own (no global `MetricsSystem.bootstrap`), so a library user's
/// metrics backend is left alone. Every series carries `jobs_file` (and `shard` when sharded), so
/// several batches on one host stay apart.
///
/// | metric | type | labels |
/// |---|---|---|
/// | `fetchctl_last_run_timestamp_seconds` | gauge | |
/// | `fetchctl_last_success_timestamp_seconds` | gauge (absent before the first success) | |
/// | `fetchctl_run_duration_seconds` | gauge | |
/// | `fetchctl_run_finished` | gauge: 1, or 0 when stopped early (interrupted, `fail_fast`, `--max-time`) | |
/// | `fetchctl_run_exit_code` | gauge | |
/// | `fetchctl_jobs` | gauge | `outcome` |
/// | `fetchctl_job_failures` | gauge | `error` (the error code) |
/// | `fetchctl_requests_total` | counter | `host`, `status_class` (`2xx`…`5xx`, `error` without a response) |
/// | `fetchctl_retries_total` | counter | |
/// | `fetchctl_downloaded_bytes_total` | counter (body bytes over the network) | |
/// | `fetchctl_cache_results_total` | counter | `result` (`hit`, `revalidated`, `stale`, `miss`) |
/// | `fetchctl_peak_resident_memory_bytes` | gauge: the process's peak RSS (VmHWM) at the run's end | |
public final class RunMetrics: EventMonitor, Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let labels: [(String, String)]
    private let retries: CoreMetrics.Counter
    private let bytes: CoreMetrics.Counter
    private let requests = LockedBox([String: CoreMetrics.Counter]())
    private let cacheResults = LockedBox([RequestMetrics.CacheUse: CoreMetrics.Counter]())

    /// - Parameters:
    ///   - jobsFile: the jobs file's name, the `jobs_file` label.
    ///   - shard: `I/N` when the run is one shard of a batch (the `shard` label).
    public init(jobsFile: String, shard: String? = nil) {
        factory = PrometheusMetricsFactory(registry: registry)
        var labels = [("jobs_file", jobsFile)]
        if let shard { labels.append(("shard", shard)) }
        self.labels = labels
        retries = CoreMetrics.Counter(label: "fetchctl_retries_total", dimensions: labels, factory: factory)
        bytes = CoreMetrics.Counter(label: "fetchctl_downloaded_bytes_total", dimensions: labels, factory: factory)
        for use in [RequestMetrics.CacheUse.hit, .revalidated, .stale, .miss] { _ = cacheCounter(use) }
    }

    // MARK: - As the run goes

    public func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics) {
        cacheCounter(metrics.cache).increment()
        guard metrics.cache != .hit, metrics.cache != .stale || metrics.status != 0 else { return }
        if metrics.cache != .revalidated { bytes.increment(by: Int64(metrics.bytes)) }
        requestCounter(host: Self.host(of: request.url), statusClass: "\(metrics.status / 100)xx").increment()
    }

    public func request(_ request: RequestInfo, didFailWithError error: FetchError) {
        guard error.status == nil else { return }  // a response arrived: counted with its metrics
        requestCounter(host: Self.host(of: request.url), statusClass: "error").increment()
    }

    public func requestIsRetrying(_ request: RequestInfo, retry: RetryInfo) {
        retries.increment()
    }

    // MARK: - At the end

    /// Adds what only the end of the run knows. `lastSuccess` is when the last run that exited 0
    /// ended (this one, or an earlier one from the state store); nil leaves the series out.
    public func finish(_ summary: RunSummary, exitCode: Int32, endedAt: Date, lastSuccess: Date?) {
        func gauge(_ name: String, _ value: Double, _ extra: [(String, String)] = []) {
            CoreMetrics.Gauge(label: name, dimensions: labels + extra, factory: factory).record(value)
        }
        gauge("fetchctl_last_run_timestamp_seconds", endedAt.timeIntervalSince1970)
        if let lastSuccess { gauge("fetchctl_last_success_timestamp_seconds", lastSuccess.timeIntervalSince1970) }
        gauge("fetchctl_run_duration_seconds", summary.duration.seconds)
        if let peak = Self.peakResidentBytes() { gauge("fetchctl_peak_resident_memory_bytes", Double(peak)) }
        gauge("fetchctl_run_finished", summary.stop == nil && exitCode != ExitStatus.interrupted.rawValue
              && exitCode != ExitStatus.terminated.rawValue ? 1 : 0)
        gauge("fetchctl_run_exit_code", Double(exitCode))
        for outcome in JobResult.Outcome.allCases {
            gauge("fetchctl_jobs", Double(summary.count(outcome)), [("outcome", outcome.rawValue)])
        }
        for (code, count) in summary.tally.errors.sorted(by: { $0.key < $1.key }) {
            gauge("fetchctl_job_failures", Double(count), [("error", code)])
        }
    }

    /// The Prometheus text exposition format of everything recorded.
    public var text: String { registry.emitToString() }

    // MARK: - Helpers

    private func requestCounter(host: String, statusClass: String) -> CoreMetrics.Counter {
        requests.withLock { counters in
            let key = host + " " + statusClass
            if let known = counters[key] { return known }
            let made = CoreMetrics.Counter(label: "fetchctl_requests_total", dimensions: labels + [("host", host), ("status_class", statusClass)], factory: factory)
            counters[key] = made
            return made
        }
    }

    private func cacheCounter(_ use: RequestMetrics.CacheUse) -> CoreMetrics.Counter {
        cacheResults.withLock { counters in
            if let known = counters[use] { return known }
            let made = CoreMetrics.Counter(label: "fetchctl_cache_results_total", dimensions: labels + [("result", use.rawValue)], factory: factory)
            counters[use] = made
            return made
        }
    }

    /// The host (and port) of a URL as text: `api.example.org:8443`.
    static func host(of url: String) -> String {
        // Bytes, not Foundation's `range(of:)`: this runs for every request.
        guard let offset = UTF8Text.schemeSeparator(in: url) else { return "" }
        var rest = Substring(url.utf8.dropFirst(offset + 3))
        if let at = rest.firstIndex(of: "@"), rest[..<at].firstIndex(of: "/") == nil { rest = rest[rest.index(after: at)...] }
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        return String(rest[..<end])
    }

    /// The process's peak resident memory so far, from `/proc/self/status` (`VmHWM`): this program's
    /// own, unlike `getrusage`, whose figure includes the memory of the process it was started
    /// from when that one used `vfork` (as `posix_spawn` does). nil where there is no `/proc`.
    static func peakResidentBytes() -> Int64? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int64($0) }) else { return nil }
        return kib * 1024
    }
}
