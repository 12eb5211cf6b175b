/// The one runtime error type: a stable machine `code` (the `error` field of the log), a human
/// message, and the (redacted) URL it concerns.
public struct FetchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable, snake_case codes; scripts and tests match on them.
    public enum Code: String, Sendable, CaseIterable {
        /// A connect, read (stall) or total deadline passed.
        case timeout
        /// The connection was refused, reset or closed before a response.
        case connection
        case dns
        /// The server's certificate was refused (untrusted, expired, another host's), or the
        /// server refused ours; or a `tls` file can't be used.
        case tls
        /// The handshake failed or timed out otherwise (retryable by default).
        case tlsHandshake = "tls_handshake"
        /// The server's key matches none of `tls.pins`; nothing was sent. Never retried.
        case tlsPinMismatch = "tls_pin_mismatch"
        /// The proxy refused the tunnel (403, …), could not be reached, or is not usable.
        case proxy
        /// The proxy refused its credentials (407). Never retried, and the run's later requests
        /// through that proxy fail at once: retrying a wrong password locks corporate accounts.
        case proxyAuth = "proxy_auth"
        /// A `save`/`download` path leads outside `output_dir` (through `..` or a symbolic link).
        case pathEscape = "path_escape"
        /// The body ended before the length the server promised.
        case truncated
        /// The status is not in the route's `validate.status`.
        case status
        /// The response failed content-type or size validation.
        case validation
        case redirect
        case auth
        case cancelled
        case io
        case diskFull = "disk_full"
        case checksum
        /// The request can't be made or sent: a template that makes no valid URL, a header value
        /// with a line break or another control character, a field name that is not a token. Never retried.
        case invalidRequest = "invalid_request"
        /// A data file's record makes no job: a missing column, a value its route's param refuses,
        /// a key or output path another record has. The message names `file:line:column`. Never retried.
        case invalidRecord = "invalid_record"
        /// The cache policy forbids the network (`--offline`, `return_cache_dont_load`,
        /// `only-if-cached`) and nothing usable is stored.
        case notCached = "not_cached"
        /// A job uses a capture (`{{jobs.<id>.<name>}}`) that its job's response did not have.
        case captureMissing = "capture_missing"
        /// The network was down longer than `settings.network.max_wait` (the run exits 75).
        case offline
    }

    public var code: Code
    public var message: String
    /// The request URL with secrets redacted, when the error concerns one.
    public var url: String?
    /// The HTTP status, when a response arrived.
    public var status: Int?
    /// Attempts made before the request gave up (set by `Session`).
    public var attempts: Int?
    /// The failure is the kind a network outage causes (no route, network down, a temporary DNS
    /// failure, a connect timeout): the runner asks its `NetworkMonitor` before spending a retry.
    public var isNetworkDown = false

    public init(_ code: Code, _ message: String, url: String? = nil, status: Int? = nil) {
        self.code = code
        self.message = message
        self.url = url
        self.status = status
    }

    public var description: String {
        "\(code.rawValue): \(message)" + (url.map { " (\($0))" } ?? "")
    }
}

extension Result where Failure == FetchError {
    /// The value, or the error with `url` (redacted) as the request it belongs to: for failures
    /// found once and kept (a `tls` block that can't be used), thrown for each request.
    func get(locatedAt url: String) throws(FetchError) -> Success {
        switch self {
        case .success(let value):
            return value
        case .failure(var error):
            error.url = url
            throw error
        }
    }
}
