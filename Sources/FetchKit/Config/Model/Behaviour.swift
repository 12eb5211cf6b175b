/// The behaviour blocks a layer of configuration may set: built-in defaults, jobs-file `settings`, a
/// route file's `defaults`, a route, a job. Every field is optional; `merged(over:)` lets the more
/// specific layer win key by key, deeply (lists replace; headers merge by name).
///
/// The fields live in one shared, copy-on-write box: every job, route and layer holds a Behaviour,
/// and a 100,000-job file held 100,000 copies of 536 bytes each where most were the same layers.
/// A copy is a reference until one side changes a field.
public struct Behaviour: Sendable, Equatable {
    private final class Storage: @unchecked Sendable {
        var headers: [HeaderSetting] = []
        var timeout = TimeoutOptions()
        var retry = RetryOptions()
        var cache = CacheOptions()
        var validate = ValidationOptions()
        var redirect = RedirectOptions()
        var auth: AuthOptions?
        var tls = TLSOptions()

        init() {}

        init(copying other: Storage) {
            headers = other.headers
            timeout = other.timeout
            retry = other.retry
            cache = other.cache
            validate = other.validate
            redirect = other.redirect
            auth = other.auth
            tls = other.tls
        }
    }

    /// Never changed while shared (see `unique`): that is what makes the box Sendable. Every
    /// behaviour starts with the one empty box, so the many layers that set nothing cost nothing.
    private var storage = Self.emptyStorage
    private static let emptyStorage = Storage()

    private mutating func unique() {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
    }

    /// Header edits in order; a nil value removes an inherited header.
    public var headers: [HeaderSetting] {
        get { storage.headers }
        set { unique(); storage.headers = newValue }
    }
    public var timeout: TimeoutOptions {
        get { storage.timeout }
        set { unique(); storage.timeout = newValue }
    }
    public var retry: RetryOptions {
        get { storage.retry }
        set { unique(); storage.retry = newValue }
    }
    public var cache: CacheOptions {
        get { storage.cache }
        set { unique(); storage.cache = newValue }
    }
    public var validate: ValidationOptions {
        get { storage.validate }
        set { unique(); storage.validate = newValue }
    }
    public var redirect: RedirectOptions {
        get { storage.redirect }
        set { unique(); storage.redirect = newValue }
    }
    /// Replaced as a whole by a more specific layer (an auth block is one choice, not a set of keys).
    public var auth: AuthOptions? {
        get { storage.auth }
        set { unique(); storage.auth = newValue }
    }
    public var tls: TLSOptions {
        get { storage.tls }
        set { unique(); storage.tls = newValue }
    }

    public static func == (lhs: Behaviour, rhs: Behaviour) -> Bool {
        if lhs.storage === rhs.storage { return true }
        return lhs.headers == rhs.headers && lhs.timeout == rhs.timeout && lhs.retry == rhs.retry && lhs.cache == rhs.cache
            && lhs.validate == rhs.validate && lhs.redirect == rhs.redirect && lhs.auth == rhs.auth && lhs.tls == rhs.tls
    }

    /// No field set: layering it over anything gives that thing.
    var isEmpty: Bool { self == Behaviour.empty }
    private static let empty = Behaviour()

    public init() {}

    /// `self` (more specific) layered over `base`.
    public func merged(over base: Behaviour) -> Behaviour {
        if isEmpty { return base }  // shares base's box: most jobs add nothing to their route's layers
        var out = base
        out.headers = base.headers + headers
        out.timeout = timeout.merged(over: base.timeout)
        out.retry = retry.merged(over: base.retry)
        out.cache = cache.merged(over: base.cache)
        out.validate = validate.merged(over: base.validate)
        out.redirect = redirect.merged(over: base.redirect)
        out.auth = auth ?? base.auth
        out.tls = tls.merged(over: base.tls)
        return out
    }

    /// The headers after every edit, in first-set order.
    public var resolvedHeaders: HTTPHeaders {
        var result = HTTPHeaders()
        for setting in headers { result[setting.name] = setting.value }
        return result
    }
}

/// One `headers:` entry. A nil value (`Accept: null`) removes the header set by an outer layer.
public struct HeaderSetting: Sendable, Equatable {
    public var name: String
    public var value: String?

    public init(name: String, value: String?) {
        self.name = name
        self.value = value
    }
}

/// Returns `specific` when set, else `base`.
@inline(__always) func pick<T>(_ specific: T?, _ base: T?) -> T? { specific ?? base }

/// `timeout`: connect, read (longest silence between body bytes) and total deadlines.
public struct TimeoutOptions: Sendable, Equatable {
    public var connect: Duration?
    public var read: Duration?
    public var total: Duration?

    public init(connect: Duration? = nil, read: Duration? = nil, total: Duration? = nil) {
        self.connect = connect
        self.read = read
        self.total = total
    }

    func merged(over b: TimeoutOptions) -> TimeoutOptions {
        TimeoutOptions(connect: pick(connect, b.connect), read: pick(read, b.read), total: pick(total, b.total))
    }
}

/// `retry`, after Alamofire's `RetryPolicy` (defaults live in `RetryOptions.defaults`).
public struct RetryOptions: Sendable, Equatable {
    public enum Jitter: String, Sendable, CaseIterable { case full, equal, none }

    /// Transport failures that may be retried.
    public enum ErrorKind: String, Sendable, CaseIterable {
        case timeout, connection, dns
        case tlsHandshake = "tls_handshake"
        case truncated
        /// The proxy refused or failed the connection (its 407, 403, an unreachable proxy).
        case proxy
    }

    public var limit: Int?
    public var backoffBase: Double?
    public var backoffScale: Duration?
    public var backoffMax: Duration?
    public var jitter: Jitter?
    public var methods: [HTTPMethod]?
    public var statuses: StatusSet?
    public var errors: [ErrorKind]?
    public var honorRetryAfter: Bool?
    public var retryAfterMax: Duration?
    public var budget: Duration?

    public init() {}

    /// Alamofire's `RetryPolicy` defaults plus 429 and `Retry-After` (SPEC §2.2).
    public static let defaults: RetryOptions = {
        var r = RetryOptions()
        r.limit = 2
        r.backoffBase = 2
        r.backoffScale = .milliseconds(500)
        r.backoffMax = .seconds(30)
        r.jitter = .full
        r.methods = HTTPMethod.allCases.filter(\.isIdempotent).filter { $0 != .query }
        r.statuses = StatusSet([408...408, 429...429, 500...500, 502...504])
        r.errors = ErrorKind.allCases
        r.honorRetryAfter = true
        r.retryAfterMax = .seconds(120)
        r.budget = .seconds(600)
        return r
    }()

    func merged(over b: RetryOptions) -> RetryOptions {
        var r = RetryOptions()
        r.limit = pick(limit, b.limit)
        r.backoffBase = pick(backoffBase, b.backoffBase)
        r.backoffScale = pick(backoffScale, b.backoffScale)
        r.backoffMax = pick(backoffMax, b.backoffMax)
        r.jitter = pick(jitter, b.jitter)
        r.methods = pick(methods, b.methods)
        r.statuses = pick(statuses, b.statuses)
        r.errors = pick(errors, b.errors)
        r.honorRetryAfter = pick(honorRetryAfter, b.honorRetryAfter)
        r.retryAfterMax = pick(retryAfterMax, b.retryAfterMax)
        r.budget = pick(budget, b.budget)
        return r
    }
}

/// `cache`, after `URLRequest.CachePolicy` and Alamofire's `ResponseCacher`.
public struct CacheOptions: Sendable, Equatable {
    public enum Policy: String, Sendable, CaseIterable {
        case `protocol`
        case returnCacheElseLoad = "return_cache_else_load"
        case returnCacheDontLoad = "return_cache_dont_load"
        case reload
    }

    public enum Behavior: Sendable, Equatable {
        case cache
        case doNotCache
        case modify(ttl: Duration?, stripHeaders: [String])
    }

    public var policy: Policy?
    public var behavior: Behavior?
    public var staleIfError: Duration?
    /// RFC 9111 §4.2.2 heuristic freshness for responses without explicit freshness (default off).
    public var heuristic: Bool?

    public init(policy: Policy? = nil, behavior: Behavior? = nil, staleIfError: Duration? = nil, heuristic: Bool? = nil) {
        self.policy = policy
        self.behavior = behavior
        self.staleIfError = staleIfError
        self.heuristic = heuristic
    }

    func merged(over b: CacheOptions) -> CacheOptions {
        CacheOptions(policy: pick(policy, b.policy), behavior: pick(behavior, b.behavior),
                     staleIfError: pick(staleIfError, b.staleIfError), heuristic: pick(heuristic, b.heuristic))
    }
}

/// `validate`: acceptable statuses and content types, after Alamofire's `validate()`.
public struct ValidationOptions: Sendable, Equatable {
    public enum ContentType: Sendable, Equatable {
        /// Match the request's `Accept` header, wildcards included.
        case accept
        case list([String])
    }

    public var status: StatusSet?
    public var contentType: ContentType?
    /// The largest acceptable body in bytes, like curl's `--max-filesize`.
    public var maxSize: Int64?

    public init(status: StatusSet? = nil, contentType: ContentType? = nil, maxSize: Int64? = nil) {
        self.status = status
        self.contentType = contentType
        self.maxSize = maxSize
    }

    func merged(over b: ValidationOptions) -> ValidationOptions {
        ValidationOptions(status: pick(status, b.status), contentType: pick(contentType, b.contentType),
                          maxSize: pick(maxSize, b.maxSize))
    }
}

/// `redirect`: `follow` (at most 10), `no_follow`, or `{max, cross_host}`.
public struct RedirectOptions: Sendable, Equatable {
    public var follow: Bool?
    public var max: Int?
    public var crossHost: Bool?

    public init(follow: Bool? = nil, max: Int? = nil, crossHost: Bool? = nil) {
        self.follow = follow
        self.max = max
        self.crossHost = crossHost
    }

    func merged(over b: RedirectOptions) -> RedirectOptions {
        RedirectOptions(follow: pick(follow, b.follow), max: pick(max, b.max), crossHost: pick(crossHost, b.crossHost))
    }
}

/// `auth`: how requests authenticate.
public enum AuthOptions: Sendable, Equatable {
    case none
    case bearer(String)
    case basic(username: String, password: String)
    case header(name: String, value: String)
    case oauth2(OAuth2Options)
}

/// `auth.oauth2`, after Alamofire's `AuthenticationInterceptor` with an OAuth2 credential.
public struct OAuth2Options: Sendable, Equatable {
    public enum Grant: String, Sendable, CaseIterable {
        case clientCredentials = "client_credentials"
        case refreshToken = "refresh_token"
    }

    public var tokenURL: String
    public var clientID: String
    public var clientSecret: String?
    public var scope: String?
    public var grant: Grant
    public var refreshToken: String?

    public init(tokenURL: String, clientID: String, clientSecret: String? = nil, scope: String? = nil,
                grant: Grant = .clientCredentials, refreshToken: String? = nil) {
        self.tokenURL = tokenURL
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.scope = scope
        self.grant = grant
        self.refreshToken = refreshToken
    }
}

/// `tls`: trust anchors (`ca_file`, added to the system's or replacing them), public-key pins, a
/// client certificate, and the (loudly warned) `insecure` switch. Every key is optional; layers
/// merge key by key.
public struct TLSOptions: Sendable, Hashable {
    /// How `ca_file` combines with the system's trust store.
    public enum CAMode: String, Sendable, Hashable, CaseIterable {
        /// Trusted besides the system's CAs (the default): a private CA next to public ones.
        case add
        /// Trusted instead of the system's CAs: only servers the file's CAs signed are accepted.
        case replace
    }

    /// A PEM bundle of CA certificates.
    public var caFile: String?
    /// Default `add`.
    public var caMode: CAMode?
    /// `sha256/<base64 of the SHA-256 of a SubjectPublicKeyInfo>`: the server's certificate must
    /// carry one of these keys (checked after the handshake, before any request byte is sent).
    public var pins: [String]?
    public var insecure: Bool?
    /// A PEM client certificate (chain) and its PEM private key, for servers that require one.
    public var clientCert: String?
    public var clientKey: String?
    /// The passphrase of an encrypted `clientKey` (from `${VAR}`; never written anywhere).
    public var clientKeyPassphrase: String?

    public init(caFile: String? = nil, caMode: CAMode? = nil, pins: [String]? = nil, insecure: Bool? = nil,
                clientCert: String? = nil, clientKey: String? = nil, clientKeyPassphrase: String? = nil) {
        self.caFile = caFile
        self.caMode = caMode
        self.pins = pins
        self.insecure = insecure
        self.clientCert = clientCert
        self.clientKey = clientKey
        self.clientKeyPassphrase = clientKeyPassphrase
    }

    /// Whether anything differs from the client's defaults (system trust store, verified, no pins).
    public var isDefault: Bool { self == TLSOptions() }

    func merged(over b: TLSOptions) -> TLSOptions {
        TLSOptions(caFile: pick(caFile, b.caFile), caMode: pick(caMode, b.caMode), pins: pick(pins, b.pins), insecure: pick(insecure, b.insecure),
                   clientCert: pick(clientCert, b.clientCert), clientKey: pick(clientKey, b.clientKey),
                   clientKeyPassphrase: pick(clientKeyPassphrase, b.clientKeyPassphrase))
    }
}
