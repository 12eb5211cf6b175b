/// Edits a request before each attempt is sent, after Alamofire's `RequestAdapter`: adds a fresh
/// token, a signature, a header. Adapters run in order on every attempt, retries included; a thrown
/// error stops the chain and fails the attempt (and is offered to the retriers like any failure).
public protocol RequestAdapter: Sendable {
    func adapt(_ request: BuiltRequest, for state: RequestState) async throws -> BuiltRequest
}

/// Decides whether a failed attempt is tried again, after Alamofire's `RequestRetrier`. Retriers are
/// asked in order; the first answer other than `.doNotRetry` wins.
public protocol RequestRetrier: Sendable {
    func retry(_ state: RequestState, dueTo error: FetchError) async -> RetryResult
}

/// Both halves, after Alamofire's `RequestInterceptor`; each has a do-nothing default.
public protocol RequestInterceptor: RequestAdapter, RequestRetrier {}

extension RequestInterceptor {
    public func adapt(_ request: BuiltRequest, for state: RequestState) async throws -> BuiltRequest { request }
    public func retry(_ state: RequestState, dueTo error: FetchError) async -> RetryResult { .doNotRetry }
}

/// What a retrier answers, after Alamofire's `RetryResult`.
public enum RetryResult: Sendable, Equatable {
    /// Try again at once.
    case retry
    /// Try again after the delay.
    case retryWithDelay(Duration)
    /// Give up with the attempt's error.
    case doNotRetry
    /// Give up with a different error.
    case doNotRetryWithError(FetchError)

    var retryRequired: Bool {
        switch self {
        case .retry, .retryWithDelay: return true
        case .doNotRetry, .doNotRetryWithError: return false
        }
    }
}

/// Adapters and retriers combined into one interceptor, after Alamofire's `Interceptor`: adapters run
/// in order, retriers are asked in order until one answers something other than `.doNotRetry`.
public struct Interceptor: RequestInterceptor {
    public var adapters: [any RequestAdapter]
    public var retriers: [any RequestRetrier]

    public init(adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = []) {
        self.adapters = adapters
        self.retriers = retriers
    }

    /// Each interceptor as both an adapter and a retrier, in order.
    public init(interceptors: [any RequestInterceptor]) {
        self.init(adapters: interceptors, retriers: interceptors)
    }

    public func adapt(_ request: BuiltRequest, for state: RequestState) async throws -> BuiltRequest {
        var current = request
        for adapter in adapters { current = try await adapter.adapt(current, for: state) }
        return current
    }

    public func retry(_ state: RequestState, dueTo error: FetchError) async -> RetryResult {
        for retrier in retriers {
            let result = await retrier.retry(state, dueTo: error)
            if result != .doNotRetry { return result }
        }
        return .doNotRetry
    }
}
