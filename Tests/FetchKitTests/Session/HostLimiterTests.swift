import Foundation
import Testing
@testable import FetchKit

/// `per_host`'s limiter on its own: slots, FIFO hand-over and cancellation while waiting.
@Suite struct HostLimiterTests {
    /// Waits (yielding, no sleeps) until `count` requests are queued for `host`.
    private func waitUntilQueued(_ limiter: HostLimiter, _ host: String, _ count: Int) async {
        while limiter.queued(host) < count { await Task.yield() }
    }

    @Test func waitersGetFreedSlotsInArrivalOrder() async throws {
        let limiter = HostLimiter(limit: 1)
        try await limiter.acquire("a")
        let order = LockedBox<[Int]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 1...3 {
                group.addTask {
                    try await limiter.acquire("a")
                    order.withLock { $0.append(n) }
                    limiter.release("a")
                }
                await waitUntilQueued(limiter, "a", n)
            }
            // Another host is not held up by "a".
            try await limiter.acquire("b")
            limiter.release("b")
            #expect(order.withLock { $0 }.isEmpty)
            limiter.release("a")
            try await group.waitForAll()
        }
        #expect(order.withLock { $0 } == [1, 2, 3])
        #expect(limiter.inFlight("a") == 0)
    }

    @Test func aCancelledWaiterThrowsAndNeverTakesASlot() async throws {
        let limiter = HostLimiter(limit: 2)
        try await limiter.acquire("h")
        try await limiter.acquire("h")
        let waiter = Task { try await limiter.acquire("h") }
        await waitUntilQueued(limiter, "h", 1)
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(limiter.queued("h") == 0)
        limiter.release("h")
        limiter.release("h")
        #expect(limiter.inFlight("h") == 0)
    }

    @Test func aTaskCancelledBeforeItWaitsThrowsAtOnce() async throws {
        let limiter = HostLimiter(limit: 1)
        try await limiter.acquire("h")
        let waiter = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await limiter.acquire("h")
        }
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(limiter.queued("h") == 0)
        #expect(limiter.inFlight("h") == 1)
        // A free slot is taken even by a cancelled task: waiting is what cancellation interrupts.
        limiter.release("h")
        #expect(limiter.inFlight("h") == 0)
    }

    /// The host a request counts against is Foundation's `host`, lower-cased, however the URL is
    /// written: the fast reading of the URL's text must agree with it wherever it answers.
    @Test func theHostKeyIsFoundationsHostLowerCased() throws {
        let urls = [
            "http://127.0.0.1:8080/a", "https://Example.ORG/x?y=1", "http://example.org", "http://example.org?q", "http://example.org#f",
            "https://user:pw@Example.org:8443/p", "http://user@example.org/", "http://[::1]:8080/", "http://[FE80::1]/",
            "http://ex%41mple.org/", "http://例え.jp/", "HTTP://HOST.example:80/", "http://h:1/a:b@c",
        ]
        for text in urls {
            let url = try #require(URL(string: text), "\(text)")
            #expect(Session.hostKey(of: url) == (url.host?.lowercased() ?? ""), "\(text)")
        }
    }
}
