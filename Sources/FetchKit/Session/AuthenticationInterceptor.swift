import Foundation

/// A credential an `Authenticator` applies, after Alamofire's `AuthenticationCredential`.
public protocol AuthenticationCredential: Sendable {
    /// True when the credential should be refreshed before it is used (it expires soon).
    var requiresRefresh: Bool { get }
}

/// Obtains and applies credentials, after Alamofire's `Authenticator`.
public protocol Authenticator: Sendable {
    associatedtype Credential: AuthenticationCredential

    /// Adds the credential to a request.
    func apply(_ credential: Credential, to request: inout BuiltRequest)
    /// Obtains a new credential (the first one when `credential` is nil).
    func refresh(_ credential: Credential?) async throws -> Credential
    /// Whether the failure means the credential was rejected (by default: a 401).
    func didRequest(_ request: BuiltRequest, with response: TransportResponseHead, failDueToAuthenticationError error: FetchError) -> Bool
    /// Whether `request` carried `credential` (false means another request refreshed it since).
    func isRequest(_ request: BuiltRequest, authenticatedWith credential: Credential) -> Bool
}

/// Adds a credential to every request and refreshes it before it expires and once when a request
/// gets a 401, after Alamofire's `AuthenticationInterceptor`. One interceptor is shared by every
/// request that uses the credential, so they all wait for a single refresh. More than
/// `maximumRefreshes` refreshes within `refreshWindow` fail the request with `auth`.
public final class AuthenticationInterceptor<A: Authenticator>: RequestInterceptor {
    public let authenticator: A
    /// Named in `auth.refreshed` events (the route's service).
    public let service: String
    public let refreshWindow: Duration
    public let maximumRefreshes: Int
    private let monitor: (any EventMonitor)?
    private let store = CredentialStore<A.Credential>()

    public init(authenticator: A, service: String, refreshWindow: Duration = .seconds(30), maximumRefreshes: Int = 5,
                monitor: (any EventMonitor)? = nil) {
        self.authenticator = authenticator
        self.service = service
        self.refreshWindow = refreshWindow
        self.maximumRefreshes = maximumRefreshes
        self.monitor = monitor
    }

    public func adapt(_ request: BuiltRequest, for state: RequestState) async throws -> BuiltRequest {
        let credential = try await store.credential(refreshing: { try await self.refresh($0, reason: $0 == nil ? "initial" : "expiring") })
        var adapted = request
        authenticator.apply(credential, to: &adapted)
        return adapted
    }

    public func retry(_ state: RequestState, dueTo error: FetchError) async -> RetryResult {
        guard let sent = state.lastRequest, let response = state.response,
              authenticator.didRequest(sent, with: response, failDueToAuthenticationError: error) else { return .doNotRetry }
        if let current = await store.current, !authenticator.isRequest(sent, authenticatedWith: current) {
            return .retry  // Another request refreshed the credential meanwhile.
        }
        guard await store.markRefreshed(requestID: state.id) else {
            return .doNotRetryWithError(FetchError(.auth, "still unauthorized (HTTP \(response.status)) after refreshing the credential",
                                                   url: error.url, status: response.status))
        }
        do {
            _ = try await store.forceRefresh(refreshing: { try await self.refresh($0, reason: "unauthorized") })
            return .retry
        } catch {
            let failure = error as? FetchError ?? FetchError(.auth, "\(error)")
            return .doNotRetryWithError(failure)
        }
    }

    private func refresh(_ credential: A.Credential?, reason: String) async throws -> A.Credential {
        try await store.recordRefresh(window: refreshWindow, maximum: maximumRefreshes)
        let fresh = try await authenticator.refresh(credential)
        monitor?.authenticatorDidRefresh(service: service, reason: reason)
        return fresh
    }
}

/// The shared credential, with one refresh in flight at a time.
actor CredentialStore<Credential: AuthenticationCredential> {
    private(set) var current: Credential?
    private var refreshing: Task<Credential, Error>?
    private var refreshTimes: [ContinuousClock.Instant] = []
    private var refreshedRequests: Set<Int> = []

    /// A usable credential, refreshed first when there is none or it expires soon.
    func credential(refreshing refresh: @escaping @Sendable (Credential?) async throws -> Credential) async throws -> Credential {
        if let current, !current.requiresRefresh { return current }
        return try await forceRefresh(refreshing: refresh)
    }

    /// Refreshes (or joins the refresh already in flight).
    func forceRefresh(refreshing refresh: @escaping @Sendable (Credential?) async throws -> Credential) async throws -> Credential {
        if let refreshing { return try await refreshing.value }
        let previous = current
        let task = Task { try await refresh(previous) }
        refreshing = task
        defer { refreshing = nil }
        let fresh = try await task.value
        current = fresh
        return fresh
    }

    /// Counts a refresh; throws `auth` past `maximum` within `window`.
    func recordRefresh(window: Duration, maximum: Int) throws {
        let now = ContinuousClock.now
        refreshTimes.removeAll { now - $0 > window }
        guard refreshTimes.count < maximum else {
            throw FetchError(.auth, "the credential was refreshed \(maximum) times within \(DurationGrammar.format(window)); giving up")
        }
        refreshTimes.append(now)
    }

    /// True the first time a request asks for a refresh after a 401.
    func markRefreshed(requestID: Int) -> Bool {
        refreshedRequests.insert(requestID).inserted
    }
}
