import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import FetchKit

/// `HomeRelay`: a small HTTP/2 response's callbacks run on the request's own event loop, in order,
/// and a throw there ends the exchange with its error; a large one stays on the connection's loop.
@Suite struct HomeRelayTests {
    struct Refused: Error, Equatable {}

    /// Two loops of their own: `other` stands for the HTTP/2 connection's, `home` for the request's.
    final class Loops: Sendable {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let home: EventLoop
        let other: EventLoop

        init() {
            var loops = group.makeIterator()
            other = loops.next()!
            home = loops.next()!
        }

        func shutdown() async throws { try await group.shutdownGracefully() }
    }

    /// What the callbacks saw: each call's name and whether it ran on the home loop.
    final class Calls: Sendable {
        let seen = LockedBox<[(String, Bool)]>([])
        func add(_ name: String, on loop: EventLoop) { seen.withLock { $0.append((name, loop.inEventLoop)) } }
        var names: [String] { seen.withLock { $0.map(\.0) } }
        var allAtHome: Bool { seen.withLock { $0.allSatisfy(\.1) } }
        var noneAtHome: Bool { seen.withLock { $0.allSatisfy { !$0.1 } } }
    }

    func head(length: Int64?) -> TransportResponseHead {
        TransportResponseHead(status: 200, headers: HTTPHeaders(), expectedLength: length, httpVersion: "2")
    }

    /// Runs the wrapped callbacks on `loops.other` (the "connection"), as `ExchangeCore` would:
    /// the head, then `chunks`, then the completion; returns what the completion delivered and
    /// the errors the wrapped callbacks threw back at the connection.
    func exchange(_ relay: HomeRelay, length: Int64?, chunks: [String], calls: Calls, loops: Loops,
                  throwOn: String? = nil) async throws -> (Result<Int, Error>, [Error]) {
        let onHead = relay.head { _ in
            calls.add("head", on: loops.home)
            if throwOn == "head" { throw Refused() }
        }
        let onChunk = relay.chunk { buffer in
            let text = String(buffer: buffer)
            calls.add(text, on: loops.home)
            if throwOn == text { throw Refused() }
        }
        let thrown = LockedBox<[Error]>([])
        let result = try await loops.other.submit { () -> EventLoopFuture<Result<Int, Error>> in
            let promise = loops.other.makePromise(of: Result<Int, Error>.self)
            do { try onHead(head(length: length)) } catch { thrown.withLock { $0.append(error) } }
            for chunk in chunks {
                do { try onChunk(ByteBuffer(string: chunk)) } catch { thrown.withLock { $0.append(error) } }
            }
            relay.finish(Result<Int, Error>.success(chunks.count)) { promise.succeed($0) }
            return promise.futureResult
        }.flatMap { $0 }.get()
        return (result, thrown.withLock { $0 })
    }

    @Test func aSmallResponsesCallbacksRunAtHomeInOrderBeforeItsCompletion() async throws {
        let loops = Loops()
        let calls = Calls()
        let relay = HomeRelay(home: loops.home) { _ in Issue.record("nothing failed: nothing to cancel") }
        let chunks = (1...50).map { "chunk \($0)" }
        let (result, thrown) = try await exchange(relay, length: 50 * 8, chunks: chunks, calls: calls, loops: loops)
        #expect(try result.get() == 50)
        #expect(thrown.isEmpty)
        #expect(calls.names == ["head"] + chunks)
        #expect(calls.allAtHome)
        try await loops.shutdown()
    }

    @Test(arguments: [HomeRelay.limit + 1, nil] as [Int64?])
    func aLargeOrUnannouncedBodyStaysOnTheConnectionsLoop(length: Int64?) async throws {
        let loops = Loops()
        let calls = Calls()
        let relay = HomeRelay(home: loops.home) { _ in }
        let (result, _) = try await exchange(relay, length: length, chunks: ["a", "b"], calls: calls, loops: loops)
        #expect(try result.get() == 2)
        #expect(calls.names == ["head", "a", "b"])
        #expect(calls.noneAtHome)
        try await loops.shutdown()
    }

    /// A chunk's write fails at home: the exchange is cancelled with that error, the chunks behind
    /// it are not written, and the completion reports the error even if the stream had ended well.
    @Test func aThrowAtHomeCancelsTheExchangeWithItsErrorAndSkipsTheRest() async throws {
        let loops = Loops()
        let calls = Calls()
        let cancelledWith = LockedBox<[Error]>([])
        let relay = HomeRelay(home: loops.home) { error in cancelledWith.withLock { $0.append(error) } }
        let (result, _) = try await exchange(relay, length: 100, chunks: ["a", "b", "c", "d"], calls: calls, loops: loops, throwOn: "b")
        #expect(throws: Refused.self) { try result.get() }
        #expect(calls.names == ["head", "a", "b"])
        #expect(cancelledWith.withLock { $0.count } == 1)
        #expect(cancelledWith.withLock { $0.first } is Refused)
        try await loops.shutdown()
    }
}
