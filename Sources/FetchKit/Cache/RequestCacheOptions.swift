import Foundation

/// How one request uses the session's `ResponseCache` (a route's `cache` block). Only `GET` and
/// `HEAD` responses are looked up and stored; any successful unsafe request invalidates what is
/// stored for its URL.
public struct RequestCacheOptions: Sendable {
    /// `URLRequest.CachePolicy`'s choices: `protocol` (RFC 9111), `returnCacheElseLoad`,
    /// `returnCacheDontLoad` (offline) or `reload`.
    public var policy: CacheOptions.Policy
    /// What is stored (Alamofire's `ResponseCacher`).
    public var handler: any CachedResponseHandler
    /// Serve a stored response this stale when the network fails (transport error, timeout, 5xx)
    /// after the retries; the response's own `stale-if-error` may allow more (RFC 5861).
    public var staleIfError: Duration?
    /// RFC 9111 §4.2.2 heuristic freshness (10% of the time since `Last-Modified`, at most a day).
    /// Off by default: a cron job must not skip fetching for weeks on a guess.
    public var heuristic: Bool
    /// Store responses to requests that carry credentials (`Authorization`, a route's `auth`).
    /// Off unless the route says `behavior` explicitly: a login or token response must never be
    /// replayed to someone else.
    public var storesAuthenticated: Bool
    /// The request carries credentials added after the cache is consulted (OAuth2's adapter).
    public var authenticated: Bool

    public init(policy: CacheOptions.Policy = .protocol, handler: any CachedResponseHandler = ResponseCacher.cache,
                staleIfError: Duration? = nil, heuristic: Bool = false, storesAuthenticated: Bool = false, authenticated: Bool = false) {
        self.policy = policy
        self.handler = handler
        self.staleIfError = staleIfError
        self.heuristic = heuristic
        self.storesAuthenticated = storesAuthenticated
        self.authenticated = authenticated
    }
}

extension RequestCacheOptions {
    /// What a job's layered `cache` block asks for; `offline` (`fetchctl run --offline`) makes every
    /// request `return_cache_dont_load`.
    init(_ behaviour: Behaviour, offline: Bool) {
        let cache = behaviour.cache
        let handler: ResponseCacher
        switch cache.behavior {
        case nil, .cache?: handler = .cache
        case .doNotCache?: handler = .doNotCache
        case .modify(let ttl, let strip)?: handler = .modify(ttl: ttl.map(\.seconds), stripHeaders: strip)
        }
        var authenticated = false
        if let auth = behaviour.auth, auth != .none { authenticated = true }
        self.init(policy: offline ? .returnCacheDontLoad : cache.policy ?? .protocol, handler: handler, staleIfError: cache.staleIfError,
                  heuristic: cache.heuristic ?? false, storesAuthenticated: cache.behavior != nil, authenticated: authenticated)
    }
}
