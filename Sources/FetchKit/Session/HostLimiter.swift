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

/// `rate_limits`: requests to a host spaced at least `period / count` apart (a token bucket holding
/// one token, so no burst ever exceeds the rate). A grant is decided under a lock at the moment it is
/// given, so a waiter that wakes late pushes the next grant back instead of bunching up with it.
/// Waiting is cancellable.
final class RateLimiter: Sendable {
    private let intervals: [String: Duration]
    private let next = LockedBox([String: ContinuousClock.Instant]())

    /// - Parameter rates: per host name, as `rate_limits` gives them.
    init(rates: [(host: String, rate: Rate)]) {
        var intervals: [String: Duration] = [:]
        for (host, rate) in rates { intervals[host.lowercased()] = rate.period / rate.count }
        self.intervals = intervals
    }

    /// Returns when the next request to `host` may start, with the instant it was granted.
    @discardableResult
    func acquire(_ host: String) async throws -> ContinuousClock.Instant {
        let key = host.lowercased()
        guard let interval = intervals[key] else { return .now }
        while true {
            let wait = next.withLock { next -> ContinuousClock.Instant? in
                let now = ContinuousClock.now
                if let due = next[key], due > now { return due }
                next[key] = now + interval
                return nil
            }
            guard let wait else { return .now }
            try await Task.sleep(until: wait, clock: .continuous)
        }
    }
}
