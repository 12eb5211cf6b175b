import Foundation
import FetchKitTesting
@testable import FetchKit

/// A running test server and a session pointed at it, torn down after the body, on every path.
/// `client` picks the session's HTTP client: the Session behaviour tests run through both.
func withSession(client: Session.HTTPClientKind = .fetchKit, perHost: Int = 4, rateLimits: [(host: String, rate: Rate)] = [], redactor: Redactor = Redactor(),
                 interceptor: (any RequestInterceptor)? = nil, monitors: [any EventMonitor] = [],
                 _ body: (TestServer, Session) async throws -> Void) async throws {
    let server = try await TestServer.start()
    var configuration = Session.Configuration(perHost: perHost, rateLimits: rateLimits, redactor: redactor)
    configuration.client = client
    let session = Session(configuration: configuration, interceptor: interceptor, eventMonitors: monitors)
    var failure: Error?
    do { try await body(server, session) } catch { failure = error }
    try await session.shutdown()
    try await server.shutdown()
    if let failure { throw failure }
}

/// Records every event a monitor sees, as `event` names with their details, for assertions.
final class EventRecorder: EventMonitor {
    struct Entry: Sendable {
        var event: String
        var request: RequestInfo?
        var detail: String
        var delay: Duration?
        var time = ContinuousClock.now
    }

    private let box = LockedBox<[Entry]>([])

    var entries: [Entry] { box.withLock { $0 } }
    func events(_ name: String) -> [Entry] { entries.filter { $0.event == name } }

    private func add(_ event: String, _ request: RequestInfo? = nil, _ detail: String = "", delay: Duration? = nil) {
        box.withLock { $0.append(Entry(event: event, request: request, detail: detail, delay: delay)) }
    }

    func requestDidCreate(_ request: RequestInfo) { add("created", request) }
    func requestDidResume(_ request: RequestInfo) { add("request.started", request) }
    func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics) { add("request.finished", request, "\(metrics.status)") }
    func request(_ request: RequestInfo, didFailWithError error: FetchError) { add("request.failed", request, error.code.rawValue) }
    func requestIsRetrying(_ request: RequestInfo, retry: RetryInfo) { add("request.retrying", request, retry.reason, delay: retry.delay) }
    func requestDidFinish(_ request: RequestInfo, error: FetchError?) { add("finished", request, error?.code.rawValue ?? "ok") }
    func authenticatorDidRefresh(service: String, reason: String) { add("auth.refreshed", nil, reason) }
    func jobDidFinish(_ result: JobResult) { add("job.finished", nil, "\(result.job)=\(result.outcome.rawValue)") }
}

extension RetryPolicy {
    /// A policy with small, unjittered delays for timing tests.
    static func fast(limit: Int = 2, scale: Duration = .milliseconds(100), configure: (inout RetryOptions) -> Void = { _ in }) -> RetryPolicy {
        var options = RetryOptions()
        options.limit = limit
        options.backoffScale = scale
        options.jitter = RetryOptions.Jitter.none
        configure(&options)
        return RetryPolicy(options)
    }
}

/// Gaps between consecutive request arrivals at the server, in seconds.
func arrivalGaps(_ requests: [RecordedRequest]) -> [Double] {
    zip(requests.dropFirst(), requests).map { ($0.time - $1.time).seconds }
}

func url(_ server: TestServer, _ path: String) -> String { server.baseURL + path }
