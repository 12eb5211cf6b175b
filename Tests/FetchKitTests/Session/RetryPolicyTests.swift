import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// RetryPolicy against the local server: counts, delays measured from the server's request log,
/// Retry-After in both forms, methods, statuses, transport failures, budget, cancellation.
///
/// Timing: the policy's chosen delays are checked exactly (from `request.retrying`); the server's
/// request log shows each wait really happened (a gap of at least the delay). Upper bounds are loose
/// (`slack`): the whole test suite, child processes included, shares two cores, and a loaded
/// machine can hold a wake-up back by several seconds (all 300 tests start at once, TLS handshakes
/// and child processes among them; a gap of 5.x s was seen). They still tell a 300 ms wait from a
/// 30 s one.
@Suite struct RetryPolicyTests {
    static let slack = 12.0

    @Test(arguments: Session.HTTPClientKind.allCases)
    func retriesUntilSuccessWithExponentialBackoff(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client, monitors: [recorder]) { server, session in
            let response = try await session.data(url(server, "/flaky/backoff?fail=2"), options: RequestOptions(retryPolicy: .fast()))
            #expect(response.response.status == 200)
            #expect(response.response.attempts == 3)
            let requests = server.state.requests(pathPrefix: "/flaky/backoff")
            #expect(requests.count == 3)
            // scale 100 ms, base 2, no jitter: 100 ms, then 200 ms.
            #expect(recorder.events("request.retrying").map(\.delay) == [.milliseconds(100), .milliseconds(200)])
            let gaps = arrivalGaps(requests)
            #expect(gaps[0] >= 0.1 && gaps[0] < 0.1 + Self.slack, "gap \(gaps[0])")
            #expect(gaps[1] >= 0.2 && gaps[1] < 0.2 + Self.slack, "gap \(gaps[1])")
            #expect(recorder.events("request.retrying").map(\.detail) == ["status 503", "status 503"])
            #expect(recorder.events("request.started").map { $0.request!.attempt } == [1, 2, 3])
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func givesUpAfterTheLimitWithTheLastError(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let error = await #expect(throws: FetchError.self) {
                try await session.data(url(server, "/flaky/limit?fail=9"), options: RequestOptions(retryPolicy: .fast(limit: 2, scale: .milliseconds(10))))
            }
            #expect(error?.code == .status)
            #expect(error?.status == 503)
            #expect(error?.attempts == 3)
            #expect(server.state.requests(pathPrefix: "/flaky/limit").count == 3)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func honoursRetryAfterSeconds(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client, monitors: [recorder]) { server, session in
            let response = try await session.data(url(server, "/flaky/ra-seconds?fail=1&status=429&retry_after=1"),
                                                  options: RequestOptions(retryPolicy: .fast(scale: .milliseconds(10))))
            #expect(response.response.status == 200)
            let gaps = arrivalGaps(server.state.requests(pathPrefix: "/flaky/ra-seconds"))
            #expect(recorder.events("request.retrying").map(\.delay) == [.seconds(1)])
            #expect(gaps.count == 1)
            #expect(gaps[0] >= 1.0 && gaps[0] < 1.0 + Self.slack, "gap \(gaps[0])")
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func honoursRetryAfterHTTPDate(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client, monitors: [recorder]) { server, session in
            let response = try await session.data(url(server, "/flaky/ra-date?fail=1&status=503&retry_after_date=3"),
                                                  options: RequestOptions(retryPolicy: .fast(scale: .milliseconds(10))))
            #expect(response.response.status == 200)
            let gaps = arrivalGaps(server.state.requests(pathPrefix: "/flaky/ra-date"))
            // The server wrote "now + 3 s" truncated to whole seconds, so the date is at least 2 s after
            // the first request arrived, and the retry may not arrive before it. The delay the client
            // computed is shorter by however long the answer took to be read (seconds on a loaded
            // machine, so only its upper bound is certain); `retryAfterReadsAnHTTPDate` checks the value.
            let delay = try #require(recorder.events("request.retrying").first?.delay)
            #expect(delay >= .zero && delay <= .seconds(3), "delay \(delay)")
            #expect(gaps[0] >= 1.95 && gaps[0] < 3.0 + Self.slack, "gap \(gaps[0])")
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func capsRetryAfterAtItsMaximum(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client, monitors: [recorder]) { server, session in
            let policy = RetryPolicy.fast(scale: .milliseconds(10)) { $0.retryAfterMax = .milliseconds(300) }
            _ = try await session.data(url(server, "/flaky/ra-cap?fail=1&status=429&retry_after=30"), options: RequestOptions(retryPolicy: policy))
            let gaps = arrivalGaps(server.state.requests(pathPrefix: "/flaky/ra-cap"))
            #expect(recorder.events("request.retrying").map(\.delay) == [.milliseconds(300)])
            #expect(gaps[0] >= 0.3 && gaps[0] < 0.3 + Self.slack, "gap \(gaps[0])")
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func ignoresRetryAfterWhenNotHonoured(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client, monitors: [recorder]) { server, session in
            let policy = RetryPolicy.fast(scale: .milliseconds(50)) { $0.honorRetryAfter = false }
            _ = try await session.data(url(server, "/flaky/ra-off?fail=1&status=429&retry_after=30"), options: RequestOptions(retryPolicy: policy))
            let gaps = arrivalGaps(server.state.requests(pathPrefix: "/flaky/ra-off"))
            #expect(recorder.events("request.retrying").map(\.delay) == [.milliseconds(50)])
            #expect(gaps[0] >= 0.05 && gaps[0] < 0.05 + Self.slack, "gap \(gaps[0])")
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func doesNotRetryPostByDefault(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let request = BuiltRequest(method: .post, url: URL(string: url(server, "/flaky/post?fail=1"))!, body: .data(Data("x".utf8)))
            let error = await #expect(throws: FetchError.self) {
                try await session.data(request, options: RequestOptions(retryPolicy: .fast()))
            }
            #expect(error?.status == 503)
            #expect(server.state.requests(pathPrefix: "/flaky/post").count == 1)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func retriesPostWhenItsMethodIsListed(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let request = BuiltRequest(method: .post, url: URL(string: url(server, "/flaky/post-ok?fail=1"))!, body: .data(Data("x".utf8)))
            let policy = RetryPolicy.fast(scale: .milliseconds(10)) { $0.methods = [.post] }
            let response = try await session.data(request, options: RequestOptions(retryPolicy: policy))
            #expect(response.response.status == 200)
            #expect(server.state.requests(pathPrefix: "/flaky/post-ok").map(\.bodyBytes) == [1, 1])
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func doesNotRetryNotFound(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let error = await #expect(throws: FetchError.self) {
                try await session.data(url(server, "/status/404"), options: RequestOptions(retryPolicy: .fast()))
            }
            #expect(error?.code == .status)
            #expect(error?.status == 404)
            #expect(error?.attempts == 1)
            #expect(server.state.requests(pathPrefix: "/status/404").count == 1)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func stopsWhenTheNextDelayWouldPassTheBudget(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            // Delays 100 ms, then 100 s: the first fits a 20 s budget, the second would pass it. (A
            // budget of seconds, not less: the whole suite runs at once, and a loaded machine has
            // taken seconds over a first attempt.)
            let policy = RetryPolicy.fast(limit: 5, scale: .milliseconds(100)) {
                $0.backoffBase = 1000
                $0.backoffMax = .seconds(100)
                $0.budget = .seconds(20)
            }
            let started = ContinuousClock.now
            let error = await #expect(throws: FetchError.self) {
                try await session.data(url(server, "/flaky/budget?fail=9"), options: RequestOptions(retryPolicy: policy))
            }
            #expect(error?.attempts == 2)
            #expect(server.state.requests(pathPrefix: "/flaky/budget").count == 2)
            #expect(ContinuousClock.now - started < .seconds(60))  // a second retry would wait 100 s
        }
    }

    @Test(arguments: [(0, true), (400, true), (1200, false), (2000, false)])
    func theBudgetCountsFromTheFirstAttempt(elapsedMilliseconds: Int, retries: Bool) async throws {
        let policy = RetryPolicy.fast(limit: 5, scale: .milliseconds(200)) { $0.budget = .seconds(1) }
        let request = BuiltRequest(url: URL(string: "http://127.0.0.1:9/")!)
        let state = RequestState(id: 1, job: nil, initialRequest: request, startedAt: .now - .milliseconds(elapsedMilliseconds))
        let result = await policy.retry(state, dueTo: FetchError(.timeout, "timed out"))
        #expect(result.retryRequired == retries, "\(result)")
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func retriesATruncatedBodyAndGetsTheWholeOfIt(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client, monitors: [recorder]) { server, session in
            let response = try await session.data(url(server, "/bytes/300000?seed=4&drop_after=70000&key=trunc&times=1"),
                                                  options: RequestOptions(retryPolicy: .fast(scale: .milliseconds(10))))
            #expect(Array(response.data) == GeneratedBytes.bytes(0..<300_000, seed: 4))
            #expect(recorder.events("request.failed").map(\.detail) == ["truncated"])
            #expect(response.response.attempts == 2)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aStalledBodyTimesOutAndIsRetried(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client, monitors: [recorder]) { server, session in
            let started = ContinuousClock.now
            // A read timeout of seconds: the retry's own body must not trip it on a loaded machine.
            let options = RequestOptions(timeouts: TransportTimeouts(connect: .seconds(5), read: .seconds(2), total: nil),
                                         retryPolicy: .fast(scale: .milliseconds(10)))
            let response = try await session.data(url(server, "/bytes/200000?seed=1&stall_after=1000&stall_ms=40000&key=stall&times=1"), options: options)
            #expect(response.data.count == 200_000)
            #expect(recorder.events("request.failed").map(\.detail) == ["timeout"])
            #expect(ContinuousClock.now - started < .seconds(30))  // the stall alone is 40 s
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aRefusedConnectionIsRetriedThenReported(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let refusing = try RefusingPort()
            let error = await #expect(throws: FetchError.self) {
                try await session.data("http://127.0.0.1:\(refusing.port)/", options: RequestOptions(retryPolicy: .fast(limit: 1, scale: .milliseconds(10))))
            }
            #expect(error?.code == .connection)
            #expect(error?.attempts == 2)
            withExtendedLifetime(refusing) {}
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func cancellationDuringABackoffIsNotRetried(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let task = Task {
                try await session.data(url(server, "/flaky/cancel?fail=9"), options: RequestOptions(retryPolicy: .fast(limit: 5, scale: .seconds(10))))
            }
            // Cancel once the first attempt has been answered (the policy is then waiting 10 s).
            while server.state.requests(pathPrefix: "/flaky/cancel").isEmpty { try await Task.sleep(for: .milliseconds(5)) }
            task.cancel()
            let result = await task.result
            #expect(throws: FetchError.self) { try result.get() }
            if case .failure(let error as FetchError) = result { #expect(error.code == .cancelled) }
            #expect(server.state.requests(pathPrefix: "/flaky/cancel").count == 1)
        }
    }

    @Test(arguments: [(0, 0.5), (1, 1.0), (2, 2.0), (5, 10.0)])
    func backoffIsScaleTimesBaseToTheNCappedAtMax(retry: Int, seconds: Double) {
        var policy = RetryPolicy.fast(scale: .milliseconds(500)) { $0.backoffMax = .seconds(10) }
        #expect(policy.backoff(retryCount: retry) == .seconds(seconds))
        policy.jitter = .full
        policy.random = { 0.25 }
        #expect(policy.backoff(retryCount: retry) == .seconds(seconds * 0.25))
        policy.jitter = .equal
        #expect(policy.backoff(retryCount: retry) == .seconds(seconds / 2 + seconds / 2 * 0.25))
    }

    @Test func defaultsAreAlamofiresPlus429() {
        let policy = RetryPolicy()
        #expect(policy.limit == 2)
        #expect(policy.methods == [.get, .head, .put, .delete, .options, .trace])
        #expect([408, 429, 500, 502, 503, 504].allSatisfy(policy.statuses.contains))
        #expect(!policy.statuses.contains(501) && !policy.statuses.contains(404))
        #expect(policy.errors == Set(RetryOptions.ErrorKind.allCases))
    }

    @Test func retryAfterReadsSecondsAndAnHTTPDate() throws {
        func head(_ value: String) -> TransportResponseHead {
            TransportResponseHead(status: 503, headers: HTTPHeaders([("Retry-After", value)]), expectedLength: 0)
        }
        #expect(RetryPolicy.retryAfter(head("7")) == .seconds(7))
        let inTen = HTTPDate.format(Date().addingTimeInterval(10))
        let delay = try #require(RetryPolicy.retryAfter(head(inTen)))
        // Whole seconds: "now + 10 s" truncated is between 9 and 10 s away.
        #expect(delay > .seconds(8) && delay <= .seconds(10), "delay \(delay)")
        #expect(RetryPolicy.retryAfter(head(HTTPDate.format(Date().addingTimeInterval(-60)))) == .zero)
        #expect(RetryPolicy.retryAfter(head("soon")) == nil)
    }

    @Test(arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func parsesTheThreeHTTPDateForms(text: String) {
        #expect(HTTPDate.parse(text) == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test func formatsIMFFixdate() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("yesterday") == nil)
    }
}
