import NIOCore
import NIOPosix
import Testing
@testable import FetchKit

/// `RunInvocation.onAnotherThread` starts its thread before it asks for the promise the thread's
/// result completes; `ResultHandoff` completes the promise whichever of the two comes first.
@Suite struct ResultHandoffTests {
    struct Failure: Error {}

    @Test func aResultThatComesFirstWaitsForThePromise() async throws {
        let handoff = ResultHandoff<Int>()
        handoff.deliver(.success(7))
        let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Int.self)
        handoff.deliver(to: promise)
        #expect(try await promise.futureResult.get() == 7)
    }

    @Test func aPromiseThatComesFirstWaitsForTheResult() async throws {
        let handoff = ResultHandoff<Int>()
        let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Int.self)
        handoff.deliver(to: promise)
        handoff.deliver(.failure(Failure()))
        await #expect(throws: Failure.self) { try await promise.futureResult.get() }
    }

    @Test func aBodyOnAnotherThreadCompletesItsFuture() async throws {
        for value in 0..<50 {
            #expect(try await RunInvocation.onAnotherThread { value * 2 }.get() == value * 2)
        }
    }
}
