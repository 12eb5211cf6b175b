import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import FetchKitTesting
import Logging
import NIOCore
import Testing
@testable import FetchKit
import FetchKitURLRequest

/// Per-host limits, rate limits, interceptors, OAuth2, content decoding and monitors, against the
/// local server.
@Suite struct SessionBehaviourTests {
    @Test(arguments: Session.HTTPClientKind.allCases)
    func perHostConcurrencyIsNeverExceeded(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client, perHost: 3) { server, session in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<12 { group.addTask { _ = try await session.data(url(server, "/delay/200?i=\(i)")) } }
                try await group.waitForAll()
            }
            #expect(server.state.requests.count == 12)
            #expect(server.state.peakRequestsInFlight == 3)
            #expect(server.state.peakConnections <= 3)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func rateLimitsSpaceRequestsEvenly(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client, perHost: 8, rateLimits: [("127.0.0.1", Rate(count: 10, period: .seconds(1)))]) { server, session in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<6 { group.addTask { _ = try await session.data(url(server, "/echo?i=\(i)")) } }
                try await group.waitForAll()
            }
            // 10/s: six requests take 500 ms (arrival times jitter on a loaded machine; the limiter test
            // below checks the spacing exactly). Without the limit they take a few milliseconds.
            let arrivals = server.state.requests.map(\.time).sorted()
            #expect(arrivals.count == 6)
            #expect((arrivals.last! - arrivals.first!).seconds >= 0.35)
        }
    }

    @Test func theRateLimiterNeverGrantsTwoRequestsCloserThanItsInterval() async throws {
        let limiter = RateLimiter(rates: [("example.org", Rate(count: 50, period: .seconds(1)))])
        let grants = try await withThrowingTaskGroup(of: ContinuousClock.Instant.self) { group in
            for _ in 0..<20 { group.addTask { try await limiter.acquire("EXAMPLE.org") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }.sorted()
        let gaps = zip(grants.dropFirst(), grants).map { $0 - $1 }
        #expect(gaps.count == 19)
        #expect(gaps.allSatisfy { $0 >= .milliseconds(20) }, "gaps \(gaps)")
        // Other hosts are not limited: three requests at 1/s would take 2 s.
        let slow = RateLimiter(rates: [("example.org", Rate(count: 1, period: .seconds(1)))])
        let start = ContinuousClock.now
        for _ in 0..<3 { try await slow.acquire("other.org") }
        #expect(ContinuousClock.now - start < .seconds(1.5))
    }

    struct HeaderAdapter: RequestInterceptor {
        let name: String
        func adapt(_ request: BuiltRequest, for state: RequestState) async throws -> BuiltRequest {
            var request = request
            request.headers.update(name: name, value: "attempt-\(state.attempt)")
            return request
        }
    }

    struct FailingAdapter: RequestAdapter {
        func adapt(_ request: BuiltRequest, for state: RequestState) async throws -> BuiltRequest {
            throw FetchError(.auth, "no credential available")
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func adaptersRunInOrderOnEveryAttempt(client: Session.HTTPClientKind) async throws {
        let interceptor = Interceptor(adapters: [HeaderAdapter(name: "X-First"), HeaderAdapter(name: "X-Second")])
        try await withSession(client: client, interceptor: interceptor) { server, session in
            _ = try await session.data(url(server, "/flaky/adapt?fail=1"), options: RequestOptions(retryPolicy: .fast(scale: .milliseconds(5))))
            let seen = server.state.requests.map { [$0.header("X-First"), $0.header("X-Second")] }
            #expect(seen == [["attempt-1", "attempt-1"], ["attempt-2", "attempt-2"]])
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aFailingAdapterStopsTheChainAndSendsNothing(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client, interceptor: Interceptor(adapters: [FailingAdapter(), HeaderAdapter(name: "X-Never")])) { server, session in
            let error = await #expect(throws: FetchError.self) { try await session.data(url(server, "/echo")) }
            #expect(error?.code == .auth)
            #expect(server.state.requests.isEmpty)
        }
    }

    func oauth(_ server: TestServer, session: Session, recorder: EventRecorder, expiresIn: Int = 3600,
               maximumRefreshes: Int = 5) -> AuthenticationInterceptor<OAuth2Authenticator> {
        let options = OAuth2Options(tokenURL: server.baseURL + "/oauth/token?expires_in=\(expiresIn)", clientID: "fetchctl", clientSecret: "s3cret")
        return AuthenticationInterceptor(authenticator: OAuth2Authenticator(options: options, session: session), service: "demo",
                                         maximumRefreshes: maximumRefreshes, monitor: recorder)
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func oauth2FetchesOneTokenForAllRequests(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client) { server, session in
            let auth = oauth(server, session: session, recorder: recorder)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<5 { group.addTask { _ = try await session.data(url(server, "/bearer?token=tok-1"), options: RequestOptions(interceptor: auth)) } }
                try await group.waitForAll()
            }
            #expect(server.state.tokensIssued == 1)
            #expect(recorder.events("auth.refreshed").map(\.detail) == ["initial"])
            let form = try #require(server.state.requests(pathPrefix: "/oauth/token").first)
            #expect(form.method == "POST")
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func oauth2RefreshesOnceOnA401(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client) { server, session in
            let auth = oauth(server, session: session, recorder: recorder)
            // The endpoint accepts only the second token: the first request gets a 401, refreshes, retries.
            let response = try await session.data(url(server, "/bearer?token=tok-2"), options: RequestOptions(interceptor: auth))
            #expect(response.response.status == 200)
            #expect(server.state.tokensIssued == 2)
            #expect(recorder.events("auth.refreshed").map(\.detail) == ["initial", "unauthorized"])
            #expect(server.state.requests(pathPrefix: "/bearer").map { $0.header("Authorization") } == ["Bearer tok-1", "Bearer tok-2"])
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func oauth2GivesUpWhenStillUnauthorized(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let auth = oauth(server, session: session, recorder: EventRecorder())
            let error = await #expect(throws: FetchError.self) {
                try await session.data(url(server, "/bearer?token=never"), options: RequestOptions(interceptor: auth))
            }
            #expect(error?.code == .auth)
            #expect(error?.status == 401)
            #expect(server.state.requests(pathPrefix: "/bearer").count == 2)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func oauth2RefreshesBeforeExpiry(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client) { server, session in
            let auth = oauth(server, session: session, recorder: recorder, expiresIn: 1)
            _ = try await session.data(url(server, "/bearer?token=tok-1"), options: RequestOptions(interceptor: auth))
            // The token lives 1 s and is refreshed in its last tenth: wait until it has expired.
            try await Task.sleep(for: .milliseconds(1000))
            _ = try await session.data(url(server, "/bearer?token=tok-2"), options: RequestOptions(interceptor: auth))
            #expect(recorder.events("auth.refreshed").map(\.detail) == ["initial", "expiring"])
            #expect(server.state.requests(pathPrefix: "/bearer").count == 2)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func oauth2StopsAfterTooManyRefreshes(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let auth = oauth(server, session: session, recorder: EventRecorder(), maximumRefreshes: 2)
            _ = try? await session.data(url(server, "/bearer?token=never&n=1"), options: RequestOptions(interceptor: auth))
            let error = await #expect(throws: FetchError.self) {
                try await session.data(url(server, "/bearer?token=never&n=2"), options: RequestOptions(interceptor: auth))
            }
            #expect(error?.code == .auth)
            #expect(error?.message.contains("refreshed 2 times within 30s") == true)
            #expect(server.state.tokensIssued == 2)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func compressedBodiesAreDecodedWhenAsked(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let response = try await session.data(url(server, "/bytes/100000?seed=0&compress=1"), options: RequestOptions(decodesContent: true))
            #expect(server.state.requests.first?.header("Accept-Encoding") == "gzip, deflate")
            #expect(["gzip", "deflate"].contains(response.response.head.headers["Content-Encoding"] ?? "none"))
            #expect(Array(response.data) == GeneratedBytes.bytes(0..<100_000, seed: 0))
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases, ["gzip", "deflate"])
    func eachEncodingIsDecoded(client: Session.HTTPClientKind, encoding: String) async throws {
        try await withSession(client: client) { server, session in
            let request = BuiltRequest(method: .get, url: URL(string: url(server, "/bytes/70000?seed=2&compress=1"))!,
                                       headers: HTTPHeaders([("Accept-Encoding", encoding)]))
            let response = try await session.data(request, options: RequestOptions(decodesContent: true))
            #expect(response.response.head.headers["Content-Encoding"] == encoding)
            #expect(response.response.bytes == 70_000)
            #expect(Array(response.data) == GeneratedBytes.bytes(0..<70_000, seed: 2))
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func bodiesStayAsServedWithoutDecoding(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let response = try await session.data(url(server, "/bytes/1000?compress=1"))
            #expect(server.state.requests.first?.header("Accept-Encoding") == nil)
            #expect(response.response.head.headers["Content-Encoding"] == nil)
            #expect(response.data.count == 1000)
        }
    }

    /// Pins can't be checked without TLS: a pinned request to an http:// URL is refused, not sent unpinned.
    @Test(arguments: Session.HTTPClientKind.allCases)
    func pinsOnPlainHTTPAreRefusedRatherThanIgnored(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let options = RequestOptions(tls: TLSOptions(pins: ["sha256/47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="]), retryPolicy: nil)
            let error = await #expect(throws: FetchError.self) { try await session.data(url(server, "/echo"), options: options) }
            #expect(error?.code == .tls)
            #expect(error?.message == "tls.pins can only be checked over https://; the request was not sent")
            let unreadable = RequestOptions(tls: TLSOptions(caFile: "/nonexistent/ca.pem"), retryPolicy: nil)
            let caError = await #expect(throws: FetchError.self) { try await session.data(url(server, "/echo"), options: unreadable) }
            #expect(caError?.message == "tls.ca_file '/nonexistent/ca.pem' cannot be read; the request was not sent")
            #expect(server.state.requests.isEmpty)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func monitorsSeeTheRequestLifecycleInOrder(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client, monitors: [recorder]) { server, session in
            _ = try await session.data(url(server, "/flaky/life?fail=1"), options: RequestOptions(retryPolicy: .fast(scale: .milliseconds(5)), job: "life"))
            #expect(recorder.entries.map(\.event) == [
                "created", "request.started", "request.finished", "request.failed", "request.retrying",
                "request.started", "request.finished", "finished",
            ])
            #expect(recorder.entries.allSatisfy { $0.request?.job == "life" || $0.request == nil })
        }
    }

    /// A swift-log handler that keeps every record, to check what `LoggingEventMonitor` logs.
    struct CapturingLogHandler: LogHandler {
        let records: LockedBox<[(level: Logger.Level, message: String, metadata: [String: String])]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).mapValues { "\($0)" }
            records.withLock { $0.append((event.level, "\(event.message)", fields)) }
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func swiftLogReceivesFixedMessagesWithMetadata(client: Session.HTTPClientKind) async throws {
        let records = LockedBox<[(level: Logger.Level, message: String, metadata: [String: String])]>([])
        let logger = Logger(label: "test") { _ in CapturingLogHandler(records: records) }
        try await withSession(client: client, monitors: [LoggingEventMonitor(logger: logger)]) { server, session in
            _ = try await session.data(url(server, "/flaky/swift-log?fail=1"), options: RequestOptions(retryPolicy: .fast(scale: .milliseconds(5)), job: "j"))
            let logged = records.withLock { $0 }
            #expect(logged.map(\.message) == ["request.started", "request.finished", "request.failed", "request.retrying",
                                              "request.started", "request.finished"])
            #expect(logged.map(\.level) == [.debug, .info, .warning, .warning, .debug, .info])
            #expect(logged.allSatisfy { $0.metadata["job"] == "j" && $0.metadata["url"] == "\(server.baseURL)/flaky/swift-log?fail=1" })
            #expect(logged[1].metadata["status"] == "503")
            #expect(logged[2].metadata["error"] == "status")
            #expect(logged[3].metadata["delay_ms"] == "5")
            #expect(logged[5].metadata["attempt"] == "2")
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aLibraryProgramCanUseASessionWithoutYAML(client: Session.HTTPClientKind) async throws {
        let seen = LockedBox<[Int]>([])
        var monitor = ClosureEventMonitor()
        monitor.requestDidGatherMetrics = { _, metrics in seen.withLock { $0.append(metrics.status) } }
        try await withSession(client: client, monitors: [monitor]) { server, session in
            var request = URLRequest(url: URL(string: url(server, "/echo?from=urlrequest"))!)
            request.httpMethod = "PUT"
            request.httpBody = Data("hello".utf8)
            let response = try await session.data(request)
            let echo = try #require(try JSONSerialization.jsonObject(with: response.data) as? [String: Any])
            #expect(echo["method"] as? String == "PUT")
            #expect(echo["body"] as? String == "hello")
            #expect(seen.withLock { $0 } == [200])
        }
    }
}
