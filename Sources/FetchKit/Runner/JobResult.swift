/// What one job came to. Jobs return results instead of throwing, so one failure never cancels
/// its siblings.
public struct JobResult: Sendable {
    public enum Outcome: String, Sendable, CaseIterable {
        case succeeded, failed, skipped
        case upToDate = "up_to_date"
        case cached
    }

    public var job: String
    public var outcome: Outcome
    /// The final HTTP status, when a response arrived.
    public var status: Int?
    /// Body bytes received.
    public var bytes: Int64
    public var attempts: Int
    /// Why it failed.
    public var error: FetchError?
    /// Why it was skipped.
    public var reason: String?
    public var duration: Duration
    /// Where its output landed.
    public var path: String?
    /// How the response cache answered (nil when it was not consulted: downloads, failures before it).
    public var cache: RequestMetrics.CacheUse?

    public init(job: String, outcome: Outcome, status: Int? = nil, bytes: Int64 = 0, attempts: Int = 0,
                error: FetchError? = nil, reason: String? = nil, duration: Duration = .zero, path: String? = nil,
                cache: RequestMetrics.CacheUse? = nil) {
        self.job = job
        self.outcome = outcome
        self.status = status
        self.bytes = bytes
        self.attempts = attempts
        self.error = error
        self.reason = reason
        self.duration = duration
        self.path = path
        self.cache = cache
    }

    /// The body came from the response cache (a hit, a `304`, a stale response) or, offline, from disk.
    public var isFromCache: Bool { outcome == .cached || (cache != nil && cache != .miss) }

    /// Succeeded, up to date or served from the cache: what `needs` waits for.
    public var isSuccess: Bool { outcome == .succeeded || outcome == .upToDate || outcome == .cached }
}

/// A finished run: every job's result in plan order, and why it stopped early, if it did.
public struct RunSummary: Sendable {
    public enum Stop: String, Sendable {
        /// `fail_fast`: a job failed.
        case failFast = "fail_fast"
        /// `--max-time` passed.
        case maxTime = "max_time"
        /// The run was cancelled (SIGINT/SIGTERM).
        case interrupted
    }

    public var runID: String
    public var results: [JobResult]
    public var duration: Duration
    public var stop: Stop?

    public init(runID: String, results: [JobResult], duration: Duration, stop: Stop?) {
        self.runID = runID
        self.results = results
        self.duration = duration
        self.stop = stop
    }

    public func count(_ outcome: JobResult.Outcome) -> Int { results.filter { $0.outcome == outcome }.count }
    /// Body bytes that came over the network (responses the cache answered are `cacheBytes`).
    public var bytes: Int64 { results.reduce(0) { $0 + ($1.isFromCache ? 0 : $1.bytes) } }
    /// Body bytes written from the response cache (hits, 304s, stale responses).
    public var cacheBytes: Int64 { results.reduce(0) { $0 + ($1.isFromCache ? $1.bytes : 0) } }
    /// Jobs whose response the cache answered as `use` (`hit`, `revalidated`, `stale`, `miss`).
    public func count(cache use: RequestMetrics.CacheUse) -> Int { results.filter { $0.cache == use }.count }
    public var failures: [JobResult] { results.filter { $0.outcome == .failed } }

    /// 0 when every job succeeded (or was up to date), 1 otherwise; interruption is the caller's to map.
    /// 0 when every job succeeded; 75 (try again later, as for a held lock) when a job failed
    /// because the network stayed down past `network.max_wait`; 1 otherwise.
    public var exitStatus: ExitStatus {
        if results.allSatisfy(\.isSuccess) && stop == nil { return .success }
        return results.contains { $0.error?.code == .offline } ? .locked : .jobsFailed
    }
}
