import Foundation
import FetchKitTesting
import NIOCore
import Testing
@testable import FetchKit

/// The AsyncHTTPClient transport against the local server: streaming, deadlines, truncation, errors.
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

    func fetch(_ transport: AsyncHTTPClientTransport, _ url: String, method: FetchKit.HTTPMethod = .get,
               headers: [(String, String)] = [], timeouts: TransportTimeouts = .defaults) async throws -> Sink {
        let sink = Sink()
        let request = BuiltRequest(method: method, url: URL(string: url)!, headers: HTTPHeaders(headers), body: .none)
        try await transport.send(request, timeouts: timeouts, onHead: { sink.setHead($0) }, onChunk: { sink.append($0) })
        return sink
    }

    func withServer(perHost: Int = 4, _ body: (TestServer, AsyncHTTPClientTransport) async throws -> Void) async throws {
        let server = try await TestServer.start()
        let transport = AsyncHTTPClientTransport(perHost: perHost)
        var failure: Error?
        do { try await body(server, transport) } catch { failure = error }
        try await transport.shutdown()
        try await server.shutdown()
        if let failure { throw failure }
    }

    @Test func streamsALargeBodyInChunks() async throws {
        try await withServer { server, transport in
            let sink = try await fetch(transport, server.baseURL + "/bytes/1000000?seed=3")
            #expect(sink.head?.status == 200)
            #expect(sink.head?.expectedLength == 1_000_000)
            #expect(sink.bytes == GeneratedBytes.bytes(0..<1_000_000, seed: 3))
            #expect(sink.chunks > 1)
        }
    }

    @Test func sendsMethodHeadersAndBody() async throws {
        try await withServer { server, transport in
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

    @Test func aStalledBodyHitsTheReadTimeout() async throws {
        try await withServer { server, transport in
            let timeouts = TransportTimeouts(connect: .seconds(5), read: .milliseconds(300), total: nil)
            let started = ContinuousClock.now
            await #expect(throws: FetchError.self) {
                _ = try await fetch(transport, server.baseURL + "/bytes/200000?stall_after=70000&stall_ms=5000", timeouts: timeouts)
            }
            do {
                _ = try await fetch(transport, server.baseURL + "/bytes/200000?stall_after=70000&stall_ms=5000", timeouts: timeouts)
            } catch let error as FetchError {
                #expect(error.code == .timeout)
                #expect(error.message == "no data for 300ms (read timeout)")
            }
            // Two stalled attempts, each cut after about the read timeout; waiting out the stalls would take 10 s.
            #expect(ContinuousClock.now - started < .seconds(8))
        }
    }

    @Test func aTotalDeadlineCoversTheBody() async throws {
        try await withServer { server, transport in
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

    @Test func aDroppedConnectionIsTruncated() async throws {
        try await withServer { server, transport in
            do {
                _ = try await fetch(transport, server.baseURL + "/bytes/300000?drop_after=100000")
                Issue.record("expected truncation")
            } catch let error as FetchError {
                #expect(error.code == .truncated)
                #expect(error.url == server.baseURL + "/bytes/300000?drop_after=100000")
            }
        }
    }

    @Test func aRefusedConnectionIsAConnectionError() async throws {
        // Bind a server, note its port, shut it down: nothing listens there afterwards.
        let server = try await TestServer.start()
        let port = server.port
        try await server.shutdown()
        let transport = AsyncHTTPClientTransport()
        do {
            _ = try await fetch(transport, "http://127.0.0.1:\(port)/bytes/10")
            Issue.record("expected a connection error")
        } catch let error as FetchError {
            #expect(error.code == .connection)
        }
        try await transport.shutdown()
    }

    @Test func thePoolNeverOpensMoreThanPerHostConnections() async throws {
        try await withServer(perHost: 2) { server, transport in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask { _ = try await fetch(transport, server.baseURL + "/delay/100") }
                }
                try await group.waitForAll()
            }
            #expect(server.state.requests(pathPrefix: "/delay").count == 8)
            #expect(server.state.peakConnections <= 2)
            #expect(server.state.peakRequestsInFlight == 2)
        }
    }
}
