import NIOCore

/// At most `limit` requests in flight to one host (`settings.per_host`); later requests wait in FIFO
/// order. Waiting is cancellable and does not count against a request's timeouts.
///
/// A lock, not an actor: taking a free slot, the common case, is a few instructions on the caller's
/// own thread, with no hop to another executor and back for every request.
final class HostLimiter: Sendable {
    let limit: Int

    /// A request waiting for a slot. A class, changed only under the lock: a cancelled waiter is
    /// marked and left in its queue for `release` to skip, so nothing has to search a queue or keep
    /// a set of ids, and a queue of references costs no generic copies of a continuation.
    private final class Waiter: @unchecked Sendable {
        var continuation: CheckedContinuation<Void, Error>?
        /// Cancelled before it was granted a slot: not to be queued, or to be skipped in its queue.
        var cancelled = false
        /// Granted a slot by `release`: a later cancellation changes nothing.
        var granted = false
    }

    private struct State {
        var inFlight: [String: Int] = [:]
        var waiters: [String: CircularBuffer<Waiter>] = [:]
    }

    private let state = LockedBox(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes a slot for `host` if one is free, without waiting; false when the caller must
    /// `acquire`. Synchronous, for the path nearly every request takes: an `async` call costs its
    /// callee a frame from the task's allocator even when it returns at once. A true result must be
    /// followed by one `release`, as a successful `acquire`.
    func tryAcquire(_ host: String) -> Bool {
        let limit = self.limit
        return state.withLock { s in Self.take(&s.inFlight[host, default: 0], limit: limit) }
    }

    /// Returns once the caller holds a slot for `host`; throws `CancellationError` when cancelled
    /// while waiting. Every successful `acquire` must be followed by one `release`.
    func acquire(_ host: String) async throws {
        guard !tryAcquire(host) else { return }
        let limit = self.limit
        let waiter = Waiter()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                enum Next { case wait, granted, cancelled }
                let next = state.withLock { s -> Next in
                    if waiter.cancelled { return .cancelled }
                    // A slot freed since the first look: take it.
                    if Self.take(&s.inFlight[host, default: 0], limit: limit) {
                        waiter.granted = true
                        return .granted
                    }
                    waiter.continuation = continuation
                    s.waiters[host, default: CircularBuffer()].append(waiter)
                    return .wait
                }
                switch next {
                case .wait: break
                case .granted: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let continuation = state.withLock { _ -> CheckedContinuation<Void, Error>? in
                guard !waiter.granted, !waiter.cancelled else { return nil }
                waiter.cancelled = true
                defer { waiter.continuation = nil }
                return waiter.continuation  // nil if not queued yet: it won't queue
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Frees a slot, handing it to the longest waiter if there is one.
    func release(_ host: String) {
        let next = state.withLock { s -> CheckedContinuation<Void, Error>? in
            // The host's queue changed in place, with one lookup (a copy taken out would copy it).
            if let index = s.waiters.index(forKey: host) {
                defer { if s.waiters.values[index].isEmpty { s.waiters.remove(at: index) } }
                while let waiter = s.waiters.values[index].popFirst() {
                    guard !waiter.cancelled, let continuation = waiter.continuation else { continue }
                    waiter.granted = true
                    waiter.continuation = nil
                    return continuation  // the slot passes to it: in-flight stays the same
                }
            }
            // One lookup of the host, not three.
            if let index = s.inFlight.index(forKey: host) {
                if s.inFlight.values[index] > 1 { s.inFlight.values[index] -= 1 } else { s.inFlight.remove(at: index) }
            }
            return nil
        }
        next?.resume()
    }

    /// Takes a slot if `inFlight` (the host's entry, changed in place: one lookup) is below `limit`.
    private static func take(_ inFlight: inout Int, limit: Int) -> Bool {
        guard inFlight < limit else { return false }
        inFlight += 1
        return true
    }

    /// Requests queued for `host` and not cancelled (for tests).
    func queued(_ host: String) -> Int {
        state.withLock { s in s.waiters[host].map { $0.filter { !$0.cancelled }.count } ?? 0 }
    }

    /// Requests holding a slot for `host` (for tests).
    func inFlight(_ host: String) -> Int {
        state.withLock { $0.inFlight[host] ?? 0 }
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

    /// No `rate_limits`: `acquire` returns at once for every host, and a caller need not call it.
    var isEmpty: Bool { intervals.isEmpty }

    /// Returns when the next request to `host` may start, with the instant it was granted.
    @discardableResult
    func acquire(_ host: String) async throws -> ContinuousClock.Instant {
        // No `rate_limits` (most runs): nothing to look up or lower-case.
        if intervals.isEmpty { return .now }
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
