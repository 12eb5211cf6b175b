import Foundation

/// One request as adapters, retriers and monitors see it, after Alamofire's `Request`: which job it
/// belongs to, which attempt this is, and what the last attempt sent and received.
public struct RequestState: Sendable {
    /// Unique within a `Session`.
    public let id: Int
    /// The job this request runs for, when a runner sent it.
    public let job: String?
    /// The request as built, before any adapter.
    public let initialRequest: BuiltRequest
    /// The request the last attempt sent (after adapters and redirects); nil before the first send.
    public internal(set) var lastRequest: BuiltRequest?
    /// The last response head, when one arrived.
    public internal(set) var response: TransportResponseHead?
    /// Retries so far: 0 during the first attempt.
    public internal(set) var retryCount = 0
    /// The outage (`NetworkWaiter.outages`) this request was last sent again for, after its transfer
    /// was cut by it: once per outage, so a failing server right after one still meets the retry policy.
    var resentForOutage: Int?
    /// When the first attempt started; `retry.budget` counts from here.
    public let startedAt: ContinuousClock.Instant
    /// The last URL the request's events named and its redacted text (`Session.info`): a request
    /// names the same URL three times or more, and each `absoluteString` and redaction cost about
    /// 450 instructions and a dozen atomic reference counts.
    var shownURL: (url: URL, text: String)?

    init(id: Int, job: String?, initialRequest: BuiltRequest, startedAt: ContinuousClock.Instant = .now) {
        self.id = id
        self.job = job
        self.initialRequest = initialRequest
        self.startedAt = startedAt
    }

    /// 1-based attempt number.
    public var attempt: Int { retryCount + 1 }

    /// Time since the first attempt started.
    public var elapsed: Duration { ContinuousClock.now - startedAt }

    public var method: HTTPMethod { initialRequest.method }
}
