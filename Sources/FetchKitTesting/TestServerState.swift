import Foundation
import NIOConcurrencyHelpers

/// One request as the server saw it.
public struct RecordedRequest: Sendable {
    public var method: String
    /// Path and query as sent.
    public var uri: String
    public var path: String
    public var headers: [(name: String, value: String)]
    public var bodyBytes: Int
    /// The body's first 64 KiB (enough for the JSON of a GraphQL query).
    public var body: [UInt8] = []
    /// When the request head arrived.
    public var time: ContinuousClock.Instant
    /// The protocol it came over: "HTTP/1.1", or "HTTP/2" on the TLS server when ALPN chose h2.
    public var httpVersion = "HTTP/1.1"
    /// The common name of the client certificate presented on its connection, if any.
    public var clientCertificate: String?

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// What the server records, behind a lock: requests, concurrency peaks, per-key counters.
public final class TestServerState: Sendable {
    struct Storage {
        var requests: [RecordedRequest] = []
        var openConnections = 0
        var peakConnections = 0
        var connectionsAccepted = 0
        var requestsInFlight = 0
        var peakRequestsInFlight = 0
        var hits: [String: Int] = [:]
        var files: [String: [UInt8]] = [:]
        var tokensIssued = 0
        var cacheFailures: [String: Int] = [:]
        var cacheVersions: [String: String] = [:]
        var gitHubDay = 0
    }

    private let storage = NIOLockedValueBox(Storage())

    public init() {}

    /// The GitHub-like API's day (`/gh`): each day adds two commits to every third repository.
    public var gitHubDay: Int {
        get { storage.withLockedValue { $0.gitHubDay } }
        set { storage.withLockedValue { $0.gitHubDay = newValue } }
    }

    /// Every request so far, in arrival order.
    public var requests: [RecordedRequest] { storage.withLockedValue { $0.requests } }

    /// Requests whose path starts with `prefix`.
    public func requests(pathPrefix prefix: String) -> [RecordedRequest] {
        requests.filter { $0.path.hasPrefix(prefix) }
    }

    /// Connections accepted so far (on the TLS server: TLS handshakes).
    public var connectionsAccepted: Int { storage.withLockedValue { $0.connectionsAccepted } }

    /// Connections open now.
    public var openConnections: Int { storage.withLockedValue { $0.openConnections } }

    /// The most connections open at once.
    public var peakConnections: Int { storage.withLockedValue { $0.peakConnections } }

    /// The most requests being answered at once.
    public var peakRequestsInFlight: Int { storage.withLockedValue { $0.peakRequestsInFlight } }

    /// Access tokens the OAuth2 endpoint has issued.
    public var tokensIssued: Int { storage.withLockedValue { $0.tokensIssued } }

    /// Serves `bytes` at `/files/<name>` (with ETag and Range like `/bytes`); replacing them changes the ETag.
    public func setFile(_ name: String, bytes: [UInt8]) {
        storage.withLockedValue { $0.files[name] = bytes }
    }

    /// Makes `/cache/<key>` answer `status` (a 5xx, say) until set back to nil: the origin failing
    /// while a cache holds its last good response.
    public func setCacheFailure(_ key: String, status: Int?) {
        storage.withLockedValue { $0.cacheFailures[key] = status }
    }

    /// Changes what `/cache/<key>` serves: its body and default ETag name `version` (default `v1`).
    public func setCacheVersion(_ key: String, _ version: String) {
        storage.withLockedValue { $0.cacheVersions[key] = version }
    }

    /// Requests `/cache/<key>` has answered with a body (not 304s).
    public func cacheServed(_ key: String) -> Int {
        storage.withLockedValue { $0.hits["cache:\(key)"] ?? 0 }
    }

    func cacheFailure(_ key: String) -> Int? { storage.withLockedValue { $0.cacheFailures[key] } }
    func cacheVersion(_ key: String) -> String { storage.withLockedValue { $0.cacheVersions[key] ?? "v1" } }

    /// Clears the request log and the peaks (per-key counters stay).
    public func resetLog() {
        storage.withLockedValue {
            $0.requests = []
            $0.peakConnections = $0.openConnections
            $0.peakRequestsInFlight = $0.requestsInFlight
        }
    }

    // MARK: - Used by the handler

    func connectionOpened() {
        storage.withLockedValue {
            $0.openConnections += 1
            $0.connectionsAccepted += 1
            $0.peakConnections = max($0.peakConnections, $0.openConnections)
        }
    }

    func connectionClosed() {
        storage.withLockedValue { $0.openConnections -= 1 }
    }

    func requestStarted(_ request: RecordedRequest) {
        storage.withLockedValue {
            $0.requests.append(request)
            $0.requestsInFlight += 1
            $0.peakRequestsInFlight = max($0.peakRequestsInFlight, $0.requestsInFlight)
        }
    }

    func requestFinished() {
        storage.withLockedValue { $0.requestsInFlight -= 1 }
    }

    /// Counts a hit on `key` and returns the count including this one.
    func hit(_ key: String) -> Int {
        storage.withLockedValue { s in
            s.hits[key, default: 0] += 1
            return s.hits[key]!
        }
    }

    func file(_ name: String) -> [UInt8]? {
        storage.withLockedValue { $0.files[name] }
    }

    func issueToken() -> Int {
        storage.withLockedValue { s in
            s.tokensIssued += 1
            return s.tokensIssued
        }
    }
}
