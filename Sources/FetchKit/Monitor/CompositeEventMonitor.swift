/// Forwards every event to each of its monitors in order, after Alamofire's `CompositeEventMonitor`.
/// The monitors are called in place (`monitors[i]`), not copied out of the array one by one as a
/// `for … in` does: a copy and a release of each monitor for each of a job's events.
public struct CompositeEventMonitor: EventMonitor {
    public let monitors: [any EventMonitor]

    public init(_ monitors: [any EventMonitor]) {
        self.monitors = monitors
    }

    public func requestDidCreate(_ request: RequestInfo) { for i in monitors.indices { monitors[i].requestDidCreate(request) } }
    public func request(_ request: RequestInfo, didAdaptInitialRequest initial: BuiltRequest, to adapted: BuiltRequest) {
        for i in monitors.indices { monitors[i].request(request, didAdaptInitialRequest: initial, to: adapted) }
    }
    public func requestDidResume(_ request: RequestInfo) { for i in monitors.indices { monitors[i].requestDidResume(request) } }
    public func request(_ request: RequestInfo, didReceiveBytes count: Int) { for i in monitors.indices { monitors[i].request(request, didReceiveBytes: count) } }
    public func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics) {
        for i in monitors.indices { monitors[i].request(request, didGatherMetrics: metrics) }
    }
    public func request(_ request: RequestInfo, didValidateWithError error: FetchError?) {
        for i in monitors.indices { monitors[i].request(request, didValidateWithError: error) }
    }
    public func request(_ request: RequestInfo, didFailWithError error: FetchError) {
        for i in monitors.indices { monitors[i].request(request, didFailWithError: error) }
    }
    public func requestIsRetrying(_ request: RequestInfo, retry: RetryInfo) { for i in monitors.indices { monitors[i].requestIsRetrying(request, retry: retry) } }
    public func requestDidFinish(_ request: RequestInfo, error: FetchError?) { for i in monitors.indices { monitors[i].requestDidFinish(request, error: error) } }
    public func authenticatorDidRefresh(service: String, reason: String) {
        for i in monitors.indices { monitors[i].authenticatorDidRefresh(service: service, reason: reason) }
    }
    public func downloadDidResume(job: String?, offset: Int64) { for i in monitors.indices { monitors[i].downloadDidResume(job: job, offset: offset) } }
    public func downloadDidSplit(job: String?, segments: Int, total: Int64, done: Int64) {
        for i in monitors.indices { monitors[i].downloadDidSplit(job: job, segments: segments, total: total, done: done) }
    }
    public func downloadDidRestart(job: String?, offset: Int64, reason: String) {
        for i in monitors.indices { monitors[i].downloadDidRestart(job: job, offset: offset, reason: reason) }
    }
    public func downloadDidVerify(job: String?, algorithm: String, digest: String, bytes: Int64) {
        for i in monitors.indices { monitors[i].downloadDidVerify(job: job, algorithm: algorithm, digest: digest, bytes: bytes) }
    }
    public func paginationDidFetchPage(job: String, page: Int, records: Int?) {
        for i in monitors.indices { monitors[i].paginationDidFetchPage(job: job, page: page, records: records) }
    }
    public func paginationDidResume(job: String, page: Int) { for i in monitors.indices { monitors[i].paginationDidResume(job: job, page: page) } }
    public func paginationDidStop(job: String, page: Int, reason: String) { for i in monitors.indices { monitors[i].paginationDidStop(job: job, page: page, reason: reason) } }
    public func responseCacheDidReport(_ problem: CacheProblem) { for i in monitors.indices { monitors[i].responseCacheDidReport(problem) } }
    public func networkWasLost() { for i in monitors.indices { monitors[i].networkWasLost() } }
    public func networkWasRestored(after down: Duration) { for i in monitors.indices { monitors[i].networkWasRestored(after: down) } }
    public func networkMonitorDidFail(_ message: String) { for i in monitors.indices { monitors[i].networkMonitorDidFail(message) } }
    public func runDidStart(_ run: RunInfo) { for i in monitors.indices { monitors[i].runDidStart(run) } }
    public func jobDidStart(_ job: String) { for i in monitors.indices { monitors[i].jobDidStart(job) } }
    public func jobDidFinish(_ result: JobResult) { for i in monitors.indices { monitors[i].jobDidFinish(result) } }
    public func runDidFinish(_ summary: RunSummary) { for i in monitors.indices { monitors[i].runDidFinish(summary) } }
}

/// A monitor made of closures, after Alamofire's `ClosureEventMonitor`: set the ones you need.
public struct ClosureEventMonitor: EventMonitor {
    public var requestDidCreate: (@Sendable (RequestInfo) -> Void)?
    public var requestDidAdapt: (@Sendable (RequestInfo, BuiltRequest, BuiltRequest) -> Void)?
    public var requestDidResume: (@Sendable (RequestInfo) -> Void)?
    public var requestDidReceiveBytes: (@Sendable (RequestInfo, Int) -> Void)?
    public var requestDidGatherMetrics: (@Sendable (RequestInfo, RequestMetrics) -> Void)?
    public var requestDidValidate: (@Sendable (RequestInfo, FetchError?) -> Void)?
    public var requestDidFail: (@Sendable (RequestInfo, FetchError) -> Void)?
    public var requestIsRetrying: (@Sendable (RequestInfo, RetryInfo) -> Void)?
    public var requestDidFinish: (@Sendable (RequestInfo, FetchError?) -> Void)?
    public var authenticatorDidRefresh: (@Sendable (String, String) -> Void)?
    public var responseCacheDidReport: (@Sendable (CacheProblem) -> Void)?
    public var runDidStart: (@Sendable (RunInfo) -> Void)?
    public var jobDidStart: (@Sendable (String) -> Void)?
    public var jobDidFinish: (@Sendable (JobResult) -> Void)?
    public var runDidFinish: (@Sendable (RunSummary) -> Void)?

    public init() {}

    public func requestDidCreate(_ request: RequestInfo) { requestDidCreate?(request) }
    public func request(_ request: RequestInfo, didAdaptInitialRequest initial: BuiltRequest, to adapted: BuiltRequest) {
        requestDidAdapt?(request, initial, adapted)
    }
    public func requestDidResume(_ request: RequestInfo) { requestDidResume?(request) }
    public func request(_ request: RequestInfo, didReceiveBytes count: Int) { requestDidReceiveBytes?(request, count) }
    public func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics) { requestDidGatherMetrics?(request, metrics) }
    public func request(_ request: RequestInfo, didValidateWithError error: FetchError?) { requestDidValidate?(request, error) }
    public func request(_ request: RequestInfo, didFailWithError error: FetchError) { requestDidFail?(request, error) }
    public func requestIsRetrying(_ request: RequestInfo, retry: RetryInfo) { requestIsRetrying?(request, retry) }
    public func requestDidFinish(_ request: RequestInfo, error: FetchError?) { requestDidFinish?(request, error) }
    public func authenticatorDidRefresh(service: String, reason: String) { authenticatorDidRefresh?(service, reason) }
    public func responseCacheDidReport(_ problem: CacheProblem) { responseCacheDidReport?(problem) }
    public func runDidStart(_ run: RunInfo) { runDidStart?(run) }
    public func jobDidStart(_ job: String) { jobDidStart?(job) }
    public func jobDidFinish(_ result: JobResult) { jobDidFinish?(result) }
    public func runDidFinish(_ summary: RunSummary) { runDidFinish?(summary) }
}
