/// Receives what a `Session` and a `Runner` do, after Alamofire's `EventMonitor`: requests created,
/// adapted, started (resumed), their metrics, validation, failures and retries, and the run's jobs.
/// Every method has a do-nothing default, so a monitor implements only what it needs.
///
/// Calls arrive on the transfer path, from many tasks at once: an implementation must return quickly
/// (queue its I/O, never wait on it) and be safe to call concurrently.
public protocol EventMonitor: Sendable {
    // MARK: Requests (Alamofire's names where they apply)

    /// A request was built from its `RequestConvertible`.
    func requestDidCreate(_ request: RequestInfo)
    /// The adapters produced the request an attempt sends.
    func request(_ request: RequestInfo, didAdaptInitialRequest initial: BuiltRequest, to adapted: BuiltRequest)
    /// A request goes on the wire (each attempt and each redirect hop): `request.started`.
    func requestDidResume(_ request: RequestInfo)
    /// Body bytes arrived (for progress displays).
    func request(_ request: RequestInfo, didReceiveBytes count: Int)
    /// A response and its body are complete: `request.finished`.
    func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics)
    /// A response head was validated; `error` is nil when it passed.
    func request(_ request: RequestInfo, didValidateWithError error: FetchError?)
    /// An attempt failed: `request.failed`.
    func request(_ request: RequestInfo, didFailWithError error: FetchError)
    /// A retrier asked for another attempt: `request.retrying`.
    func requestIsRetrying(_ request: RequestInfo, retry: RetryInfo)
    /// The request is over, successfully or not.
    func requestDidFinish(_ request: RequestInfo, error: FetchError?)
    /// An authenticator obtained a new credential: `auth.refreshed`.
    func authenticatorDidRefresh(service: String, reason: String)

    // MARK: Downloads

    /// A download continues from `offset` bytes already on disk: `download.resumed`.
    func downloadDidResume(job: String?, offset: Int64)
    /// A download is fetched over `segments` connections, each a range of its `total` bytes;
    /// `done` of them were on disk from an earlier run: `download.segmented`.
    func downloadDidSplit(job: String?, segments: Int, total: Int64, done: Int64)
    /// A download starts over from zero: `download.restarted`. `reason` is a stable code:
    /// `changed` (a `200` to `If-Range`: the file is not the one the `.part` began), `range_ignored`
    /// (a `200` with the same validator), `url_changed` (another URL and no strong validator),
    /// `range_mismatch` (a `Content-Range` that doesn't start at the `.part`'s end),
    /// `not_satisfiable` (a `416` and a `.part` that isn't the recorded length).
    func downloadDidRestart(job: String?, offset: Int64, reason: String)
    /// A finished download matched its checksum: `download.verified`.
    func downloadDidVerify(job: String?, algorithm: String, digest: String, bytes: Int64)
    /// A page of a paginated job is in and its outputs written: `pagination.page`.
    func paginationDidFetchPage(job: String, page: Int, records: Int?)
    /// A paginated job continues after the `page` an earlier run committed: `pagination.resumed`.
    func paginationDidResume(job: String, page: Int)
    /// Pagination ended before the pages did: `pagination.stopped`, a warning, and the job still
    /// succeeds. `reason`: `max_pages` (the limit was reached) or `loop` (a next link or cursor
    /// came round again).
    func paginationDidStop(job: String, page: Int, reason: String)

    // MARK: Response cache

    /// The response cache met a problem and worked around it (the entry was skipped): `cache.warning`.
    func responseCacheDidReport(_ problem: CacheProblem)

    // MARK: Network

    /// The network monitor lost the network during a run: `network.lost`.
    func networkWasLost()
    /// It came back after `down`: `network.restored` with `down_ms`.
    func networkWasRestored(after down: Duration)
    /// The network monitor could not start (no netlink socket): `network.warning`; outages are then
    /// met with the ordinary retries.
    func networkMonitorDidFail(_ message: String)

    // MARK: Runs

    func runDidStart(_ run: RunInfo)
    func jobDidStart(_ job: String)
    func jobDidFinish(_ result: JobResult)
    func runDidFinish(_ summary: RunSummary)
}

extension EventMonitor {
    public func requestDidCreate(_ request: RequestInfo) {}
    public func request(_ request: RequestInfo, didAdaptInitialRequest initial: BuiltRequest, to adapted: BuiltRequest) {}
    public func paginationDidFetchPage(job: String, page: Int, records: Int?) {}
    public func paginationDidResume(job: String, page: Int) {}
    public func paginationDidStop(job: String, page: Int, reason: String) {}
    public func requestDidResume(_ request: RequestInfo) {}
    public func request(_ request: RequestInfo, didReceiveBytes count: Int) {}
    public func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics) {}
    public func request(_ request: RequestInfo, didValidateWithError error: FetchError?) {}
    public func request(_ request: RequestInfo, didFailWithError error: FetchError) {}
    public func requestIsRetrying(_ request: RequestInfo, retry: RetryInfo) {}
    public func requestDidFinish(_ request: RequestInfo, error: FetchError?) {}
    public func authenticatorDidRefresh(service: String, reason: String) {}
    public func downloadDidResume(job: String?, offset: Int64) {}
    public func downloadDidSplit(job: String?, segments: Int, total: Int64, done: Int64) {}
    public func downloadDidRestart(job: String?, offset: Int64, reason: String) {}
    public func downloadDidVerify(job: String?, algorithm: String, digest: String, bytes: Int64) {}
    public func responseCacheDidReport(_ problem: CacheProblem) {}
    public func networkWasLost() {}
    public func networkWasRestored(after down: Duration) {}
    public func networkMonitorDidFail(_ message: String) {}
    public func runDidStart(_ run: RunInfo) {}
    public func jobDidStart(_ job: String) {}
    public func jobDidFinish(_ result: JobResult) {}
    public func runDidFinish(_ summary: RunSummary) {}
}

/// A request as monitors see it; `url` is already redacted.
public struct RequestInfo: Sendable {
    public var id: Int
    public var job: String?
    public var method: HTTPMethod
    public var url: String
    /// 1-based.
    public var attempt: Int

    public init(id: Int, job: String?, method: HTTPMethod, url: String, attempt: Int) {
        self.id = id
        self.job = job
        self.method = method
        self.url = url
        self.attempt = attempt
    }
}

/// What one request/response exchange measured.
public struct RequestMetrics: Sendable {
    /// Whether the response came from the response cache (`miss` when it came from the network).
    public enum CacheUse: String, Sendable, CaseIterable {
        case miss, hit, revalidated, stale
    }

    public var status: Int
    /// Body bytes read: the accepted body after content decoding, or a discarded error or redirect body.
    public var bytes: Int64
    public var duration: Duration
    public var cache: CacheUse
    /// With `cache: stale`: the failure the stored response stood in for.
    public var hiddenError: FetchError?
    /// The protocol the response came over ("1.1", "2"); nil when it came from the cache.
    public var httpVersion: String?

    public init(status: Int, bytes: Int64, duration: Duration, cache: CacheUse = .miss, hiddenError: FetchError? = nil,
                httpVersion: String? = nil) {
        self.status = status
        self.bytes = bytes
        self.duration = duration
        self.cache = cache
        self.hiddenError = hiddenError
        self.httpVersion = httpVersion
    }
}

/// Why and when a request is tried again.
public struct RetryInfo: Sendable {
    /// `status 503`, or the error code (`timeout`, `truncated`, …).
    public var reason: String
    public var delay: Duration
    /// What the response's `Retry-After` asked for, when it had one.
    public var retryAfter: Duration?
}

/// A run as it starts.
public struct RunInfo: Sendable {
    public var id: String
    public var jobs: Int
    public var concurrency: Int
}
