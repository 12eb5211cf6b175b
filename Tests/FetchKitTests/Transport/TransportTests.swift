import Foundation
import FetchKitTesting
import NIOCore
import Testing
@testable import FetchKit

/// Both transports against the local server: streaming, deadlines, truncation, errors, the pool.
@Suite struct TransportTests {
    /// Collects what the transport delivered.
    final class Sink: Sendable {
        private let box = LockedBox<(head: TransportResponseHead?, bytes: [UInt8], chunks: Int)>((nil, [], 0))
        var head: TransportResponseHead? { box.withLock { $0.head } }
        var bytes: [UInt8] { box.withLock { $0.bytes } }
        var chunks: Int { box.withLock { $0.chunks } }
        func setHead(_ head: TransportResponseHead) { box.withLock { $0.head = head } }
        func append(_ buffer: ByteBuffer) {
            box.withLock {
                $0.bytes += buffer.readableBytesView
                $0.chunks += 1
            }
        }
    }

    func fetch(_ transport: any HTTPTransport, _ url: String, method: FetchKit.HTTPMethod = .get,
               headers: [(String, String)] = [], timeouts: TransportTimeouts = .defaults) async throws -> Sink {
        let sink = Sink()
        let request = BuiltRequest(method: method, url: URL(string: url)!, headers: HTTPHeaders(headers), body: .none)
        try await transport.send(request, timeouts: timeouts, onHead: { sink.setHead($0) }, onChunk: { sink.append($0) })
        return sink
    }

    static func transport(_ client: Session.HTTPClientKind, perHost: Int = 4) -> any HTTPTransport {
        switch client {
        case .fetchKit: NIOTransport(perHost: perHost)
        case .asyncHTTPClient: AsyncHTTPClientTransport(perHost: perHost)
        }
    }

    func withServer(_ client: Session.HTTPClientKind, perHost: Int = 4, _ body: (TestServer, any HTTPTransport) async throws -> Void) async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(client, perHost: perHost)
        var failure: Error?
        do { try await body(server, transport) } catch { failure = error }
        try await transport.shutdown()
        try await server.shutdown()
        if let failure { throw failure }
    }

    /// FetchKit's client connects to an IP address without a resolver, and to a name through
    /// NIO's Happy Eyeballs: a refusal reads the same either way.
    @Test func aClosedPortIsRefusedAlikeByAddressAndByName() async throws {
        // A port bound and never listened on: a port freed by a stopped server could be taken
        // again by another test's server meanwhile.
        let refusing = try RefusingPort()
        let port = refusing.port
        let transport = NIOTransport(perHost: 2)
        for host in ["127.0.0.1", "localhost"] {
            do {
                _ = try await fetch(transport, "http://\(host):\(port)/bytes/10")
                Issue.record("\(host): nothing listens on \(port)")
            } catch let error as FetchError {
                #expect(error.code == .connection, "\(host): \(error)")
                #expect(error.message.hasPrefix("cannot connect to \(host):\(port): "), "\(error.message)")
                #expect(error.message == "cannot connect to \(host):\(port): Connection refused (errno 111)", "\(error.message)")
                #expect(!error.isNetworkDown, "\(host)")
            }
        }
        try await transport.shutdown()
        withExtendedLifetime(refusing) {}
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func streamsALargeBodyInChunks(client: Session.HTTPClientKind) async throws {
        try await withServer(client) { server, transport in
            let sink = try await fetch(transport, server.baseURL + "/bytes/1000000?seed=3")
            #expect(sink.head?.status == 200)
            #expect(sink.head?.expectedLength == 1_000_000)
            #expect(sink.bytes == GeneratedBytes.bytes(0..<1_000_000, seed: 3))
            #expect(sink.chunks > 1)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func sendsMethodHeadersAndBody(client: Session.HTTPClientKind) async throws {
        try await withServer(client) { server, transport in
            let sink = Sink()
            let request = BuiltRequest(method: .put, url: URL(string: server.baseURL + "/echo?x=1")!,
                                       headers: HTTPHeaders([("X-One", "1"), ("Content-Type", "text/plain")]), body: .data(Data("payload".utf8)))
            try await transport.send(request, timeouts: .defaults, onHead: { sink.setHead($0) }, onChunk: { sink.append($0) })
            let echo = try #require(try JSONSerialization.jsonObject(with: Data(sink.bytes)) as? [String: Any])
            #expect(echo["method"] as? String == "PUT")
            #expect(echo["query"] as? String == "x=1")
            #expect(echo["body"] as? String == "payload")
            #expect((echo["headers"] as? [[String]])?.contains(["X-One", "1"]) == true)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aStalledBodyHitsTheReadTimeout(client: Session.HTTPClientKind) async throws {
        try await withServer(client) { server, transport in
            // 1 s, not less: on a loaded machine a response's head may take longer than a shorter
            // deadline, and the timeout would then read "no response" (as in the test below).
            let timeouts = TransportTimeouts(connect: .seconds(5), read: .seconds(1), total: nil)
            let started = ContinuousClock.now
            await #expect(throws: FetchError.self) {
                _ = try await fetch(transport, server.baseURL + "/bytes/200000?stall_after=70000&stall_ms=30000", timeouts: timeouts)
            }
            do {
                _ = try await fetch(transport, server.baseURL + "/bytes/200000?stall_after=70000&stall_ms=30000", timeouts: timeouts)
            } catch let error as FetchError {
                #expect(error.code == .timeout)
                #expect(error.message == "no data for 1s (read timeout)")
            }
            // Two stalled attempts, each cut after about the read timeout (a second or so); waiting out
            // the stalls would take 60 s. The bound leaves room for a loaded machine: the whole suite
            // runs at once on two cores, and a timer's task may wait seconds for a thread.
            #expect(ContinuousClock.now - started < .seconds(25))
        }
    }

    /// FetchKit's client keeps one deadline timer per connection, armed by the first exchange and
    /// left armed after it: the next exchange on that connection must still get its own deadlines,
    /// sooner or later than the timer it finds.
    @Test(arguments: Session.HTTPClientKind.allCases)
    func eachExchangeOnAReusedConnectionKeepsItsOwnDeadlines(client: Session.HTTPClientKind) async throws {
        try await withServer(client, perHost: 1) { server, transport in
            // The short deadline leaves room for a loaded machine (the whole suite at once on two
            // cores): with 300 ms, the head of the last response sometimes came later than that, and
            // the timeout read "no response" instead of "no data".
            let short = TransportTimeouts(connect: .seconds(5), read: .seconds(1), total: nil)
            let long = TransportTimeouts(connect: .seconds(5), read: .seconds(10), total: nil)
            // A short deadline first: the timer it leaves fires during the next, longer one.
            _ = try await fetch(transport, server.baseURL + "/bytes/100", timeouts: short)
            let slow = try await fetch(transport, server.baseURL + "/bytes/100000?stall_after=50000&stall_ms=1500", timeouts: long)
            #expect(slow.bytes.count == 100_000)
            // A long deadline first: the next exchange's shorter one must not wait for its timer.
            _ = try await fetch(transport, server.baseURL + "/bytes/100", timeouts: long)
            let started = ContinuousClock.now
            do {
                _ = try await fetch(transport, server.baseURL + "/bytes/200000?stall_after=70000&stall_ms=30000", timeouts: short)
                Issue.record("expected a timeout")
            } catch let error as FetchError {
                #expect(error.code == .timeout)
                #expect(error.message == "no data for 1s (read timeout)")
            }
            #expect(ContinuousClock.now - started < .seconds(20), "cut by the read timeout, not after the 30 s stall")
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aTotalDeadlineCoversTheBody(client: Session.HTTPClientKind) async throws {
        try await withServer(client) { server, transport in
            let timeouts = TransportTimeouts(connect: .seconds(5), read: .seconds(5), total: .milliseconds(400))
            do {
                _ = try await fetch(transport, server.baseURL + "/bytes/200000?stall_after=1000&stall_ms=3000", timeouts: timeouts)
                Issue.record("expected a timeout")
            } catch let error as FetchError {
                #expect(error.code == .timeout)
                #expect(error.message == "the request took longer than its total timeout of 400ms")
            }
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aDroppedConnectionIsTruncated(client: Session.HTTPClientKind) async throws {
        try await withServer(client) { server, transport in
            do {
                _ = try await fetch(transport, server.baseURL + "/bytes/300000?drop_after=100000")
                Issue.record("expected truncation")
            } catch let error as FetchError {
                #expect(error.code == .truncated)
                #expect(error.url == server.baseURL + "/bytes/300000?drop_after=100000")
            }
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aRefusedConnectionIsAConnectionError(client: Session.HTTPClientKind) async throws {
        let refusing = try RefusingPort()
        let transport = Self.transport(client)
        do {
            _ = try await fetch(transport, "http://127.0.0.1:\(refusing.port)/bytes/10")
            Issue.record("expected a connection error")
        } catch let error as FetchError {
            #expect(error.code == .connection)
        }
        try await transport.shutdown()
        withExtendedLifetime(refusing) {}
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func thePoolNeverOpensMoreThanPerHostConnections(client: Session.HTTPClientKind) async throws {
        try await withServer(client, perHost: 2) { server, transport in
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Each request is held until the server has had two (10 s at most): both
                // connections then carry one at once however slowly this machine runs, where a
                // fixed 100 ms delay let a loaded machine finish every request on the first.
                for _ in 0..<8 {
                    group.addTask { _ = try await fetch(transport, server.baseURL + "/delay/10000?until_requests=2") }
                }
                try await group.waitForAll()
            }
            #expect(server.state.requests(pathPrefix: "/delay").count == 8)
            #expect(server.state.peakConnections <= 2)
            #expect(server.state.peakRequestsInFlight == 2)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aKeptAliveConnectionTheServerDroppedIsReplacedOnce(client: Session.HTTPClientKind) async throws {
        try await withServer(client, perHost: 1) { server, transport in
            // The server closes the connection when the next request comes, as one whose
            // keep-alive timeout ran out just then would. FetchKit's client sends that request
            // again on a new connection (as curl does); AsyncHTTPClient's transport reports it,
            // and leaves it to the session's retry policy.
            let first = try await fetch(transport, server.baseURL + "/bytes/100?drop_next=1")
            #expect(first.bytes.count == 100)
            switch client {
            case .fetchKit:
                let second = try await fetch(transport, server.baseURL + "/bytes/200")
                #expect(second.bytes == GeneratedBytes.bytes(0..<200, seed: 0))
                #expect(server.state.requests(pathPrefix: "/bytes").count == 2)
                #expect(server.state.connectionsAccepted == 2)
            case .asyncHTTPClient:
                let error = await #expect(throws: FetchError.self) { try await fetch(transport, server.baseURL + "/bytes/200") }
                #expect(error?.code == .connection)
                #expect(server.state.connectionsAccepted == 1)
            }
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func cancellingTheTaskEndsAnExchangeInFlight(client: Session.HTTPClientKind) async throws {
        try await withServer(client) { server, transport in
            let started = ContinuousClock.now
            let fetching = Task { try await fetch(transport, server.baseURL + "/delay/20000") }
            // Once the server has the request (seen in its log), the task is cancelled.
            while server.state.requests(pathPrefix: "/delay").isEmpty, ContinuousClock.now - started < .seconds(60) {
                try await Task.sleep(for: .milliseconds(5))
            }
            let arrived = try #require(server.state.requests(pathPrefix: "/delay").first).time
            fetching.cancel()
            let result = await fetching.result
            #expect(ContinuousClock.now - arrived < .seconds(20), "the response would have come 20 s after the request")
            guard case .failure(let error as FetchError) = result else {
                Issue.record("expected a FetchError, got \(result)")
                return
            }
            #expect(error.code == .cancelled)
        }
    }

    @Test func theRequestTargetIsReadFromTheURLsText() async throws {
        let plain = BuiltRequest(url: URL(string: "http://127.0.0.1:8080/x?y=1")!)
        let target = try #require(NIOTransport.target(of: plain))
        #expect(target.key == ConnectionPool.Key(host: "127.0.0.1", port: 8080))
        #expect(target.hostField == "127.0.0.1:8080")
        #expect(target.path == "/x?y=1")
        #expect(NIOTransport.target(of: BuiltRequest(url: URL(string: "http://example.org")!))?.path == "/")
        #expect(NIOTransport.target(of: BuiltRequest(url: URL(string: "http://example.org")!))?.hostField == "example.org")
        #expect(target.isSecure == false)
        let secure = try #require(NIOTransport.target(of: BuiltRequest(url: URL(string: "https://127.0.0.1:8443/")!)))
        #expect(secure.isSecure && secure.key == ConnectionPool.Key(host: "127.0.0.1", port: 8443) && secure.hostField == "127.0.0.1:8443")
        let defaultPort = try #require(NIOTransport.target(of: BuiltRequest(url: URL(string: "HTTPS://Example.org/a?b")!)))
        #expect(defaultPort.isSecure && defaultPort.key.port == 443 && defaultPort.hostField == "Example.org" && defaultPort.path == "/a?b")
        for other in ["httpx://h/", "ftp://h/", "http:/h/", "https:/h", "http://", "https://:443/"] {
            #expect(NIOTransport.target(of: BuiltRequest(url: URL(string: other)!)) == nil, "\(other)")
        }
        #expect(NIOTransport.target(of: BuiltRequest(url: URL(string: "http://user:pw@example.org/")!)) == nil)
        #expect(NIOTransport.target(of: BuiltRequest(url: URL(string: "HTTP://Example.org:80?q=a%20b#frag")!))?.path == "/?q=a%20b")
        #expect(NIOTransport.target(of: BuiltRequest(url: URL(string: "HTTP://Example.org:80?q=a%20b#frag")!))?.hostField == "Example.org")
        let v6 = try #require(NIOTransport.target(of: BuiltRequest(url: URL(string: "http://[::1]:8081/a/b%2Fc")!)))
        #expect(v6.key == ConnectionPool.Key(host: "::1", port: 8081))
        #expect(v6.hostField == "[::1]:8081")
        #expect(v6.path == "/a/b%2Fc")
        #expect(NIOTransport.target(of: BuiltRequest(method: .post, url: URL(string: "http://h/")!, body: .file(path: "/tmp/x"))) == nil)
        let head = NIOTransport.requestHead(BuiltRequest(method: .post, url: plain.url, headers: HTTPHeaders([("X-A", "1")]),
                                                           body: .data(Data("abc".utf8))), target: target)
        #expect(head.uri == "/x?y=1")
        #expect(head.headers.map { [$0.name, $0.value] } == [["X-A", "1"], ["Host", "127.0.0.1:8080"], ["Content-Length", "3"]])
    }
}

/// `preconnect`: FetchKit's own client opens the first connection to a host before its first
/// request (`fetchctl run` does while its state directory opens), and that request uses it.
@Suite struct PreconnectTests {
    func request(_ url: String) -> BuiltRequest {
        BuiltRequest(method: .get, url: URL(string: url)!, headers: HTTPHeaders(), body: .none)
    }

    @Test func theFirstRequestTakesThePreconnectedConnectionOpenOrOpening() async throws {
        let server = try await TestServer.start()
        let transport = NIOTransport(perHost: 4)
        transport.preconnect(for: request(server.baseURL + "/bytes/10"), options: TransportOptions())
        // Asked at once, while the connection may still be opening: it waits for that one.
        _ = try await TransportTests().fetch(transport, server.baseURL + "/bytes/10")
        _ = try await TransportTests().fetch(transport, server.baseURL + "/bytes/20")
        #expect(server.state.connectionsAccepted == 1)
        #expect(server.state.requests(pathPrefix: "/bytes").count == 2)
        // A second preconnect to a host with a connection opens nothing.
        transport.preconnect(for: request(server.baseURL + "/bytes/30"), options: TransportOptions())
        _ = try await TransportTests().fetch(transport, server.baseURL + "/bytes/30")
        #expect(server.state.connectionsAccepted == 1)
        try await transport.shutdown()
        try await server.shutdown()
    }

    @Test func aPreconnectThatFailsLeavesTheRequestToReportItsOwnError() async throws {
        let refusing = try RefusingPort()
        let transport = NIOTransport(perHost: 4)
        let url = "http://127.0.0.1:\(refusing.port)/bytes/10"
        transport.preconnect(for: request(url), options: TransportOptions())
        do {
            _ = try await TransportTests().fetch(transport, url)
            Issue.record("expected a connection error")
        } catch let error as FetchError {
            #expect(error.code == .connection)
        }
        try await transport.shutdown()
        withExtendedLifetime(refusing) {}
    }

    @Test func anUnclaimedPreconnectedConnectionIsClosedAtShutdown() async throws {
        let server = try await TestServer.start()
        let transport = NIOTransport(perHost: 4)
        transport.preconnect(for: request(server.baseURL + "/bytes/10"), options: TransportOptions())
        let deadline = ContinuousClock.now + .seconds(10)
        while server.state.connectionsAccepted == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(server.state.connectionsAccepted == 1)
        try await transport.shutdown()
        #expect(server.state.requests.isEmpty)
        try await server.shutdown()
    }
}
