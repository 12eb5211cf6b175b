/// At most `limit` requests in flight to one host (`settings.per_host`); later requests wait in FIFO
/// order. Waiting is cancellable and does not count against a request's timeouts.
actor HostLimiter {
    let limit: Int
    private var inFlight: [String: Int] = [:]
    private var waiters: [String: [(id: UInt64, continuation: CheckedContinuation<Void, Error>)]] = [:]
    private var nextID: UInt64 = 0

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Waits for a slot for `host`; throws `CancellationError` when cancelled while waiting.
    func acquire(_ host: String) async throws {
        if inFlight[host, default: 0] < limit {
            inFlight[host, default: 0] += 1
            return
        }
        nextID += 1
        let id = nextID
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                waiters[host, default: []].append((id, continuation))
            }
        } onCancel: {
            Task { await self.cancelWaiter(host, id: id) }
        }
    }

    /// Frees a slot, handing it to the longest waiter if there is one.
    func release(_ host: String) {
        if var queue = waiters[host], !queue.isEmpty {
            let next = queue.removeFirst()
            waiters[host] = queue.isEmpty ? nil : queue
            next.continuation.resume()
        } else {
            inFlight[host, default: 1] -= 1
            if inFlight[host] == 0 { inFlight[host] = nil }
        }
    }

    private func cancelWaiter(_ host: String, id: UInt64) {
        guard var queue = waiters[host], let index = queue.firstIndex(where: { $0.id == id }) else { return }
        let waiter = queue.remove(at: index)
        waiters[host] = queue.isEmpty ? nil : queue
        waiter.continuation.resume(throwing: CancellationError())
    }
}

/// `rate_limits`: requests to a host spaced evenly at `count` per `period` (a token bucket holding
/// one token, so no burst ever exceeds the rate in any window). Waiting is cancellable.
final class RateLimiter: Sendable {
    private let intervals: [String: Duration]
    private let next = LockedBox([String: ContinuousClock.Instant]())

    /// - Parameter rates: per host name (lowercased), as `rate_limits` gives them.
    init(rates: [(host: String, rate: Rate)]) {
        var intervals: [String: Duration] = [:]
        for (host, rate) in rates { intervals[host.lowercased()] = rate.period / rate.count }
        self.intervals = intervals
    }

    var isEmpty: Bool { intervals.isEmpty }

    /// Returns when the next request to `host` may start.
    func acquire(_ host: String) async throws {
        guard let interval = intervals[host.lowercased()] else { return }
        let slot = next.withLock { next -> ContinuousClock.Instant in
            let slot = max(ContinuousClock.now, next[host.lowercased()] ?? .now)
            next[host.lowercased()] = slot + interval
            return slot
        }
        if slot > .now { try await Task.sleep(until: slot, clock: .continuous) }
    }
}
