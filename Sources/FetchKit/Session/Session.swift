import Foundation

/// Sends requests the way Alamofire's `Session` does, on AsyncHTTPClient: each attempt runs the
/// `RequestConvertible`'s request through the adapters, the transport (with redirects decided by
/// the `Redirector`), validation, and on failure the retriers, which may send the whole pipeline
/// again, adapters included. Per-host concurrency and rate limits apply to every request it sends,
/// and every step is reported to its `EventMonitor`s.
///
/// ```swift
/// let session = Session(eventMonitors: [myMonitor])
/// let response = try await session.data("http://127.0.0.1:8080/echo")
/// try await session.shutdown()
/// ```
public final class Session: Sendable {
    /// Session-wide settings; per-request behaviour is in `RequestOptions`.
    public struct Configuration: Sendable {
        /// Requests in flight to one host at once (`settings.per_host`), also the pool size per host.
        public var perHost: Int
        /// Request rates per host name (`settings.rate_limits`).
        public var rateLimits: [(host: String, rate: Rate)]
        /// The connect timeout of the session's own transport.
        public var connectTimeout: Duration
        /// Hides secrets in the URLs and messages given to monitors and errors.
        public var redactor: Redactor
        /// The HTTP versions the session's own transport offers (`settings.http_version`).
        public var httpVersion: AsyncHTTPClientTransport.HTTPVersion
        /// Which requests the session's own transport sends through a proxy (none by default).
        public var proxies: ProxyResolver
        /// Requests in flight at once over all hosts, counted once a request holds its host's slot
        /// (`perHost`); nil: no limit but the callers'. For a program with more tasks sending than
        /// it wants requests in flight, so that those waiting for a busy host hold no slot another
        /// host could use. (`Runner` doesn't need it: its queue hands out jobs for hosts with room.)
        public var inFlight: Int?
        /// Which HTTP client the session's own transport is.
        public var client: HTTPClientKind

        public init(perHost: Int = 4, rateLimits: [(host: String, rate: Rate)] = [], connectTimeout: Duration = TransportTimeouts.defaults.connect,
                    redactor: Redactor = Redactor(), httpVersion: AsyncHTTPClientTransport.HTTPVersion = .auto, proxies: ProxyResolver = .direct) {
            self.perHost = perHost
            self.rateLimits = rateLimits
            self.connectTimeout = connectTimeout
            self.redactor = redactor
            self.httpVersion = httpVersion
            self.proxies = proxies
            inFlight = nil
            client = .fetchKit
        }
    }

    /// The HTTP client behind a session's own transport.
    public enum HTTPClientKind: String, Sendable, CaseIterable {
        /// `NIOTransport`: FetchKit's own HTTP/1.1 client for plain `http://` requests, and
        /// AsyncHTTPClient for the rest (HTTPS, HTTP/2, proxies, streamed bodies).
        case fetchKit = "fetchkit"
        /// `AsyncHTTPClientTransport` for every request.
        case asyncHTTPClient = "asynchttpclient"
    }

    public let configuration: Configuration
    public let transport: any HTTPTransport
    /// Runs before (adapters) and after (retriers) each request's own interceptor.
    public let interceptor: (any RequestInterceptor)?
    public let eventMonitor: CompositeEventMonitor
    /// Where `GET`/`HEAD` responses are looked up and stored for requests whose options ask for it
    /// (`RequestOptions.cache`); nil sends every request.
    public let responseCache: (any ResponseCache)?
    /// `responseCache` when it is the SQLite store, cast once here rather than per response.
    let sqliteResponseCache: SQLiteResponseCache?
    /// Waits out network outages (see `NetworkWaiter`); nil meets them with the retry policy alone.
    public let networkWaiter: NetworkWaiter?
    let hosts: HostLimiter
    /// `Configuration.inFlight`, as one FIFO of slots (a `HostLimiter` with one key).
    let slots: HostLimiter?
    let rates: RateLimiter
    private let ownsTransport: Bool
    private let lastID = LockedBox(0)

    /// - Parameters:
    ///   - transport: nil creates the transport `configuration.client` names, which `shutdown()` closes.
    ///   - cache: the response cache (`SQLiteResponseCache`); nil caches nothing.
    public init(configuration: Configuration = Configuration(), transport: (any HTTPTransport)? = nil,
                interceptor: (any RequestInterceptor)? = nil, eventMonitors: [any EventMonitor] = [],
                cache: (any ResponseCache)? = nil, networkWaiter: NetworkWaiter? = nil) {
        self.configuration = configuration
        responseCache = cache
        sqliteResponseCache = cache as? SQLiteResponseCache
        self.networkWaiter = networkWaiter
        self.transport = transport ?? Self.makeTransport(configuration)
        ownsTransport = transport == nil
        self.interceptor = interceptor
        eventMonitor = CompositeEventMonitor(eventMonitors)
        hosts = HostLimiter(limit: configuration.perHost)
        slots = configuration.inFlight.map { HostLimiter(limit: $0) }
        rates = RateLimiter(rates: configuration.rateLimits)
    }

    /// The transport a session with `configuration` and no transport of its own makes: the one
    /// `configuration.client` names, with its `perHost`, connect timeout, HTTP versions and proxies.
    public static func makeTransport(_ configuration: Configuration) -> any HTTPTransport {
        switch configuration.client {
        case .fetchKit:
            NIOTransport(perHost: configuration.perHost, connectTimeout: configuration.connectTimeout,
                         httpVersion: configuration.httpVersion, proxies: configuration.proxies)
        case .asyncHTTPClient:
            AsyncHTTPClientTransport(perHost: configuration.perHost, connectTimeout: configuration.connectTimeout,
                                     httpVersion: configuration.httpVersion, proxies: configuration.proxies)
        }
    }

    /// Closes the transport the session created. Call it once, on every path.
    public func shutdown() async throws {
        if ownsTransport { try await transport.shutdown() }
    }

    var redactor: Redactor { configuration.redactor }

    // MARK: - Requests

    /// Sends `convertible` and streams the accepted body into `sink`, retrying as the interceptors
    /// and `options.retryPolicy` decide. With a `responseCache` and `options.cache`, a stored
    /// response may answer instead (`Response.cache` says how). Throws a `FetchError` (with
    /// `attempts` set) when it gives up.
    public func execute(_ convertible: some RequestConvertible, options: RequestOptions = RequestOptions(),
                        sink: some ResponseSink) async throws -> Response {
        let initial: BuiltRequest
        do {
            initial = try convertible.makeRequest()
        } catch {
            throw FetchError(.invalidRequest, redactor.redact("\(error)"))
        }
        let id = lastID.withLock { $0 += 1; return $0 }
        if let cache = responseCache, let cacheOptions = options.cache {
            return try await executeWithCache(initial, id: id, options: options, cache: cache, cacheOptions: cacheOptions, sink: sink)
        }
        if options.cache?.policy == .returnCacheDontLoad {
            // Offline without a cache that could be opened: nothing is stored, nothing may be sent.
            var error = FetchError(.notCached, "no response cache, and the cache policy (or --offline) allows no request",
                                   url: redactor.redact(initial.url.absoluteString))
            error.attempts = 0
            throw error
        }
        return try await perform(initial, id: id, options: options, sink: sink)
    }

    /// The request pipeline proper: adapters, transport, validation, retriers.
    /// `shown`: the redacted text of `initial`'s URL when the caller made it already (the cache's
    /// path announces the request itself).
    func perform(_ initial: BuiltRequest, id: Int, options: RequestOptions, sink: some ResponseSink,
                 announce: Bool = true, shown: String? = nil) async throws -> Response {
        var state = RequestState(id: id, job: options.job, initialRequest: initial)
        if let shown { state.shownURL = (initial.url, shown) }
        // Built without allocating when there are no interceptors (most jobs); retriers only on failure.
        var interceptors: [any RequestInterceptor] = []
        if let interceptor { interceptors.append(interceptor) }
        if let own = options.interceptor { interceptors.append(own) }
        if announce { eventMonitor.requestDidCreate(info(&state, url: initial.url)) }
        while true {
            var failure: FetchError
            do {
                try Task.checkCancellation()
                var adapted = initial
                for adapter in interceptors { adapted = try await adapter.adapt(adapted, for: state) }
                Self.addDefaultHeaders(&adapted, options: options)
                eventMonitor.request(info(&state, url: adapted.url), didAdaptInitialRequest: initial, to: adapted)
                let prepared = try await sink.prepare(adapted, attempt: state.attempt)
                let response = try await attempt(prepared, state: &state, options: options, sink: sink)
                eventMonitor.requestDidFinish(info(state, url: response.request.url), error: nil)
                return response
            } catch {
                failure = fetchError(error, url: (state.lastRequest ?? initial).url)
            }
            await sink.abandon()
            let url = (state.lastRequest ?? initial).url
            failure.attempts = state.attempt
            if failure.code == .cancelled || Task.isCancelled {
                let cancelled = FetchError(.cancelled, "cancelled", url: redactor.redact(url.absoluteString), status: failure.status)
                eventMonitor.requestDidFinish(info(state, url: url), error: cancelled)
                throw withAttempts(cancelled, state)
            }
            eventMonitor.request(info(state, url: url), didFailWithError: failure)
            // An outage's failure while the monitor says the network is gone waits for the network,
            // then is sent again without counting a retry; past max_wait it is `offline`. A transfer
            // the outage cut (its connection died meanwhile) is sent again once per outage.
            var cutByOutage = false
            if !failure.isNetworkDown, let waiter = networkWaiter, let outage = waiter.outage(behind: failure), state.resentForOutage != outage {
                state.resentForOutage = outage
                cutByOutage = true
            }
            if failure.isNetworkDown || cutByOutage, let waiter = networkWaiter {
                switch await waiter.decide(after: failure, host: url.host ?? "", hasFallback: options.hasStaleFallback, cutByOutage: cutByOutage) {
                case .resend:
                    state.response = nil
                    continue
                case .giveUp:
                    var offline = FetchError(.offline, "the network has been down longer than network.max_wait (\(DurationGrammar.format(waiter.maxWait))); last error: "
                                             + "\(failure.code.rawValue): \(failure.message)", url: failure.url ?? redactor.redact(url.absoluteString))
                    offline.attempts = state.attempt
                    eventMonitor.requestDidFinish(info(state, url: url), error: offline)
                    throw offline
                case .failNow:
                    eventMonitor.requestDidFinish(info(state, url: url), error: failure)
                    throw failure
                case .retry:
                    break
                }
            }
            let delay: Duration
            let chain = Interceptor(adapters: [], retriers: interceptors + [options.retryPolicy].compactMap { $0 })
            switch await chain.retry(state, dueTo: failure) {
            case .retry: delay = .zero
            case .retryWithDelay(let wait): delay = max(.zero, wait)
            case .doNotRetry:
                eventMonitor.requestDidFinish(info(state, url: url), error: failure)
                throw failure
            case .doNotRetryWithError(let error):
                eventMonitor.requestDidFinish(info(state, url: url), error: error)
                throw withAttempts(error, state)
            }
            let retryAfter = state.response.flatMap(RetryPolicy.retryAfter)
            let reason = failure.code == .status ? "status \(failure.status ?? 0)" : failure.code.rawValue
            eventMonitor.requestIsRetrying(info(state, url: url), retry: RetryInfo(reason: reason, delay: delay, retryAfter: retryAfter))
            do {
                if delay > .zero { try await Task.sleep(for: delay) }
            } catch {
                let cancelled = FetchError(.cancelled, "cancelled while waiting to retry", url: redactor.redact(url.absoluteString))
                eventMonitor.requestDidFinish(info(state, url: url), error: cancelled)
                throw withAttempts(cancelled, state)
            }
            state.retryCount += 1
            state.response = nil
        }
    }

    /// Sends `convertible` and returns the whole body in memory (for small responses).
    public func data(_ convertible: some RequestConvertible, options: RequestOptions = RequestOptions()) async throws -> DataResponse {
        let sink = DataSink()
        let response = try await execute(convertible, options: options, sink: sink)
        return DataResponse(response: response, data: sink.data)
    }

    // MARK: - Helpers

    /// `User-Agent`, and `Accept-Encoding` when the body is decoded, unless already set.
    static func addDefaultHeaders(_ request: inout BuiltRequest, options: RequestOptions) {
        if request.headers["User-Agent"] == nil { request.headers.update(name: "User-Agent", value: Router.defaultUserAgent) }
        if options.decodesContent, request.headers["Accept-Encoding"] == nil {
            request.headers.update(name: "Accept-Encoding", value: "gzip, deflate")
        }
    }

    func info(_ state: RequestState, url: URL) -> RequestInfo {
        let shown = state.shownURL.flatMap { $0.url == url ? $0.text : nil } ?? redactor.redact(url.absoluteString)
        return RequestInfo(id: state.id, job: state.job, method: state.lastRequest?.method ?? state.method, url: shown, attempt: state.attempt)
    }

    /// `info`, remembering the URL's redacted text in `state` for the request's later events.
    func info(_ state: inout RequestState, url: URL) -> RequestInfo {
        if state.shownURL.map({ $0.url != url }) ?? true { state.shownURL = (url, redactor.redact(url.absoluteString)) }
        return info(state, url: url)
    }

    /// Any error as a `FetchError`, with secrets redacted from its message and URL.
    func fetchError(_ error: Error, url: URL) -> FetchError {
        let shown = redactor.redact(url.absoluteString)
        if var fetch = error as? FetchError {
            fetch.message = redactor.redact(fetch.message)
            fetch.url = fetch.url.map(redactor.redact) ?? shown
            return fetch
        }
        if error is CancellationError { return FetchError(.cancelled, "cancelled", url: shown) }
        return FetchError(.invalidRequest, redactor.redact("\(error)"), url: shown)
    }

    private func withAttempts(_ error: FetchError, _ state: RequestState) -> FetchError {
        var error = error
        error.attempts = state.attempt
        return error
    }
}

/// How one request behaves: what a route's `timeout`, `validate`, `redirect`, `retry` and `auth`
/// blocks become. Defaults are SPEC's built-in ones.
///
/// The options a route's blocks make are kept in one box, copied on write: the runner makes a
/// copy of its entry's options for each job and the cache's path another, and a copy is then a
/// retain of the box rather than of each string, array and object in them (48 atomic reference
/// count operations a job). What changes from job to job (`job`, `decodesContent`) is kept beside it.
public struct RequestOptions: Sendable {
    /// The shared part. Changed only through `unique()`, when no other options share it.
    private final class Shared: @unchecked Sendable {
        var timeouts: TransportTimeouts
        var tls: TLSOptions
        var validator: ResponseValidator
        var redirector: Redirector
        var retryPolicy: RetryPolicy?
        var interceptor: (any RequestInterceptor)?
        var cache: RequestCacheOptions?

        init(timeouts: TransportTimeouts, tls: TLSOptions, validator: ResponseValidator, redirector: Redirector,
             retryPolicy: RetryPolicy?, interceptor: (any RequestInterceptor)?, cache: RequestCacheOptions?) {
            self.timeouts = timeouts
            self.tls = tls
            self.validator = validator
            self.redirector = redirector
            self.retryPolicy = retryPolicy
            self.interceptor = interceptor
            self.cache = cache
        }

        func copy() -> Shared {
            Shared(timeouts: timeouts, tls: tls, validator: validator, redirector: redirector, retryPolicy: retryPolicy,
                   interceptor: interceptor, cache: cache)
        }
    }

    private var shared: Shared

    /// The shared part, made this value's own first if another shares it.
    private mutating func unique() -> Shared {
        if !isKnownUniquelyReferenced(&shared) { shared = shared.copy() }
        return shared
    }

    public var timeouts: TransportTimeouts {
        get { shared.timeouts }
        set { unique().timeouts = newValue }
    }
    /// `tls`: trust anchors, pins, a client certificate, `insecure` (see `AsyncHTTPClientTransport`).
    public var tls: TLSOptions {
        get { shared.tls }
        set { unique().tls = newValue }
    }
    public var validator: ResponseValidator {
        get { shared.validator }
        set { unique().validator = newValue }
    }
    public var redirector: Redirector {
        get { shared.redirector }
        set { unique().redirector = newValue }
    }
    /// Asked after the interceptors' retriers; nil never retries.
    public var retryPolicy: RetryPolicy? {
        get { shared.retryPolicy }
        set { unique().retryPolicy = newValue }
    }
    /// This request's own interceptor (e.g. OAuth2): adapts after the session's, retries before the policy.
    public var interceptor: (any RequestInterceptor)? {
        get { shared.interceptor }
        set { unique().interceptor = newValue }
    }
    /// How the session's response cache is used; nil sends the request without consulting it.
    public var cache: RequestCacheOptions? {
        get { shared.cache }
        set { unique().cache = newValue }
    }
    /// Sends `Accept-Encoding: gzip, deflate` (unless set) and decodes such bodies before the sink.
    public var decodesContent: Bool
    /// The job this request runs for, for monitors.
    public var job: String?
    /// Set by the session for a request a stored response may stand in for (`stale_if_error`):
    /// during an outage it fails at once rather than waiting for the network.
    var hasStaleFallback = false

    public init(timeouts: TransportTimeouts = .defaults, tls: TLSOptions = TLSOptions(), validator: ResponseValidator = ResponseValidator(),
                redirector: Redirector = .follow, retryPolicy: RetryPolicy? = RetryPolicy(),
                interceptor: (any RequestInterceptor)? = nil, decodesContent: Bool = false, job: String? = nil,
                cache: RequestCacheOptions? = nil) {
        shared = Shared(timeouts: timeouts, tls: tls, validator: validator, redirector: redirector, retryPolicy: retryPolicy,
                        interceptor: interceptor, cache: cache)
        self.decodesContent = decodesContent
        self.job = job
    }
}

/// The outcome of a request that succeeded.
public struct Response: Sendable {
    /// The last request sent (after adapters and redirects).
    public var request: BuiltRequest
    public var head: TransportResponseHead
    /// Body bytes given to the sink (after content decoding).
    public var bytes: Int64
    public var attempts: Int
    /// From the first attempt's start to the end of the body.
    public var duration: Duration
    /// Whether the body came from the response cache: `hit` (no request sent), `revalidated` (a
    /// `304`), `stale` (the network failed; `hiddenError` says how) or `miss`.
    public var cache: RequestMetrics.CacheUse = .miss
    /// The failure a stale response from the cache stood in for.
    public var hiddenError: FetchError?

    public var status: Int { head.status }
}

/// A response with its body in memory.
public struct DataResponse: Sendable {
    public var response: Response
    public var data: Data
}
