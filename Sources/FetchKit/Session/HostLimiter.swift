import NIOCore

/// At most `limit` requests in flight to one host (`settings.per_host`); later requests wait in FIFO
/// order. Waiting is cancellable and does not count against a request's timeouts.
///
/// A lock, not an actor: taking a free slot, the common case, is a few instructions on the caller's
/// own thread, with no hop to another executor and back for every request.
final class HostLimiter: Sendable {
    let limit: Int

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, Error>
    }

    private struct State {
        var inFlight: [String: Int] = [:]
        var waiters: [String: CircularBuffer<Waiter>] = [:]
        /// Requests that found no free slot and have been neither granted one nor cancelled; a
        /// cancellation removes its id, which tells a request not yet queued not to queue.
        var waiting: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state = LockedBox(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Returns once the caller holds a slot for `host`; throws `CancellationError` when cancelled
    /// while waiting. Every successful `acquire` must be followed by one `release`.
    func acquire(_ host: String) async throws {
        let limit = self.limit
        let id = state.withLock { s -> UInt64? in
            if s.inFlight[host, default: 0] < limit {
                s.inFlight[host, default: 0] += 1
                return nil
            }
            s.nextID += 1
            s.waiting.insert(s.nextID)
            return s.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                enum Next { case wait, granted, cancelled }
                let next = state.withLock { s -> Next in
                    guard s.waiting.contains(id) else { return .cancelled }
                    // A slot freed since the first look, with nobody queued: take it.
                    if s.inFlight[host, default: 0] < limit {
                        s.inFlight[host, default: 0] += 1
                        s.waiting.remove(id)
                        return .granted
                    }
                    s.waiters[host, default: CircularBuffer()].append(Waiter(id: id, continuation: continuation))
                    return .wait
                }
                switch next {
                case .wait: break
                case .granted: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            cancelWaiter(host, id: id)
        }
    }

    /// Frees a slot, handing it to the longest waiter if there is one.
    func release(_ host: String) {
        let next = state.withLock { s -> Waiter? in
            if var queue = s.waiters[host], let next = queue.popFirst() {
                s.waiters[host] = queue.isEmpty ? nil : queue
                s.waiting.remove(next.id)
                return next  // the slot passes to it: in-flight stays the same
            }
            s.inFlight[host, default: 1] -= 1
            if s.inFlight[host] == 0 { s.inFlight[host] = nil }
            return nil
        }
        next?.continuation.resume()
    }

    /// Requests queued for `host` (for tests).
    func queued(_ host: String) -> Int {
        state.withLock { $0.waiters[host]?.count ?? 0 }
    }

    /// Requests holding a slot for `host` (for tests).
    func inFlight(_ host: String) -> Int {
        state.withLock { $0.inFlight[host] ?? 0 }
    }

    private func cancelWaiter(_ host: String, id: UInt64) {
        let waiter = state.withLock { s -> Waiter? in
            // Not waiting any more: granted a slot already (it will be released as usual).
            guard s.waiting.remove(id) != nil else { return nil }
            guard var queue = s.waiters[host], let index = queue.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = queue.remove(at: index)
            s.waiters[host] = queue.isEmpty ? nil : queue
            return waiter
        }
        waiter?.continuation.resume(throwing: CancellationError())
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
            // The grant's own instant, read under the lock: one read after it could be late by a
            // preemption, and two grants would then look closer than the interval.
            let (instant, granted) = next.withLock { next -> (ContinuousClock.Instant, Bool) in
                let now = ContinuousClock.now
                if let due = next[key], due > now { return (due, false) }
                next[key] = now + interval
                return (now, true)
            }
            if granted { return instant }
            try await Task.sleep(until: instant, clock: .continuous)
        }
    }
}
