import Foundation

/// Retries what is worth retrying, after Alamofire's `RetryPolicy`, configured by SPEC's `retry`
/// block: at most `limit` retries; idempotent methods only by default; the statuses 408, 429, 500,
/// 502, 503, 504 and the transport failures `timeout`, `connection`, `dns`, `tls_handshake`,
/// `truncated`; exponential backoff `min(max, scale * base^n)` with jitter; `Retry-After` (seconds
/// or an HTTP-date) honoured up to `retry_after.max`; and a `budget` of total time after which it
/// gives up. Cancelled work is never retried.
public struct RetryPolicy: RequestRetrier {
    public var limit: Int
    public var base: Double
    public var scale: Duration
    public var max: Duration
    public var jitter: RetryOptions.Jitter
    public var methods: Set<HTTPMethod>
    public var statuses: StatusSet
    public var errors: Set<RetryOptions.ErrorKind>
    public var honorRetryAfter: Bool
    public var retryAfterMax: Duration
    public var budget: Duration
    /// A number in 0...1 for jitter; replaceable so tests can pin it.
    public var random: @Sendable () -> Double = { Double.random(in: 0...1) }

    /// The policy a `retry` block asks for, SPEC's defaults for what it leaves unset.
    public init(_ options: RetryOptions = RetryOptions()) {
        let o = options.merged(over: .defaults)
        limit = o.limit!
        base = o.backoffBase!
        scale = o.backoffScale!
        max = o.backoffMax!
        jitter = o.jitter!
        methods = Set(o.methods!)
        statuses = o.statuses!
        errors = Set(o.errors!)
        honorRetryAfter = o.honorRetryAfter!
        retryAfterMax = o.retryAfterMax!
        budget = o.budget!
    }

    public func retry(_ state: RequestState, dueTo error: FetchError) async -> RetryResult {
        guard shouldRetry(state, dueTo: error) else { return .doNotRetry }
        var delay = backoff(retryCount: state.retryCount)
        if honorRetryAfter, let retryAfter = state.response.flatMap(Self.retryAfter) {
            delay = Swift.min(retryAfter, retryAfterMax)
        }
        if state.elapsed + delay > budget { return .doNotRetry }
        return .retryWithDelay(delay)
    }

    /// Whether the failure is of a retryable kind and the limit allows another attempt.
    public func shouldRetry(_ state: RequestState, dueTo error: FetchError) -> Bool {
        guard state.retryCount < limit, methods.contains(state.method) else { return false }
        switch error.code {
        case .cancelled: return false
        case .status, .validation:
            guard let status = error.status else { return false }
            return statuses.contains(status)
        default:
            guard let kind = RetryOptions.ErrorKind(rawValue: error.code.rawValue) else { return false }
            return errors.contains(kind)
        }
    }

    /// The backoff before retry number `retryCount + 1`: `min(max, scale * base^retryCount)`, jittered.
    public func backoff(retryCount: Int) -> Duration {
        let seconds = Swift.min(max.seconds, scale.seconds * pow(base, Double(retryCount)))
        switch jitter {
        case .none: return .seconds(seconds)
        case .full: return .seconds(seconds * random())
        case .equal: return .seconds(seconds / 2 + seconds / 2 * random())
        }
    }

    /// The delay a `Retry-After` header asks for: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
    public static func retryAfter(_ head: TransportResponseHead) -> Duration? {
        guard let value = head.headers["Retry-After"]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value) { return .seconds(Swift.max(0, seconds)) }
        guard let date = HTTPDate.parse(value) else { return nil }
        return .seconds(Swift.max(0, date.timeIntervalSinceNow))
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }

    /// Whole milliseconds, rounded.
    var milliseconds: Int64 { Int64((seconds * 1000).rounded()) }
}
