import Foundation

/// How a run waits out a network outage with a `NetworkMonitor`: it logs `network.lost` and
/// `network.restored` whenever the monitor's verdict changes during the run, and when a request
/// fails the way an outage makes requests fail (`FetchError.isNetworkDown`), it decides whether the
/// request waits for the network (and is then sent again without spending a retry), gives up with
/// `offline` (the network has been gone longer than `maxWait`), or is an ordinary failure (the
/// network is there: the retry policy decides). Never asked before sending.
public final class NetworkWaiter: Sendable {
    public enum Decision: Sendable, Equatable {
        /// The network is back: send the request again. Not a retry.
        case resend
        /// The network is there, or the failure is not an outage's: the retry policy decides.
        case retry
        /// The network has been gone for `maxWait`: fail with `offline`.
        case giveUp
        /// The network is gone and a stored response may stand in (`stale_if_error`): fail now.
        case failNow
    }

    public let monitor: NetworkMonitor
    public let maxWait: Duration
    /// How long a failure waits for the monitor's verdict while it still says reachable: a connect
    /// fails with ENETUNREACH at once, the netlink message may come a moment later.
    let settle: Duration
    private let events: any EventMonitor
    private let state = LockedBox(State())

    private struct State {
        var lostAt: ContinuousClock.Instant?
        var restoredAt: ContinuousClock.Instant?
        /// Outages seen so far (each `network.lost`).
        var outages = 0
        var listener: Int?
    }

    /// How long after `network.restored` a cut transfer is still the outage's (its connection died
    /// while the network was gone, and the first bytes sent after tell it so); 10 s unless a test
    /// on a loaded machine needs longer.
    let aftermath: Duration

    public convenience init(monitor: NetworkMonitor, maxWait: Duration, events: any EventMonitor, settle: Duration = .seconds(1)) {
        self.init(monitor: monitor, maxWait: maxWait, events: events, settle: settle, aftermath: .seconds(10))
    }

    init(monitor: NetworkMonitor, maxWait: Duration, events: any EventMonitor, settle: Duration, aftermath: Duration) {
        self.monitor = monitor
        self.maxWait = maxWait
        self.events = events
        self.settle = settle
        self.aftermath = aftermath
    }

    /// Starts following the monitor (call once the run has started, so the events have a run).
    public func start() {
        let token = monitor.onChange { [self] status in changed(to: status) }
        state.withLock { $0.listener = token }
        if monitor.status == .notReachable { changed(to: .notReachable) }
    }

    public func stop() {
        if let token = state.withLock({ $0.listener }) { monitor.removeListener(token) }
    }

    /// Since when the network has been gone, while it is.
    public var lostAt: ContinuousClock.Instant? { state.withLock { $0.lostAt } }

    private func changed(to status: NetworkMonitor.Status) {
        let now = ContinuousClock.now
        switch status {
        case .notReachable:
            let isNew = state.withLock { s -> Bool in
                guard s.lostAt == nil else { return false }
                s.lostAt = now
                s.outages += 1
                return true
            }
            if isNew { events.networkWasLost() }
        case .reachable:
            guard let lost = state.withLock({ s -> ContinuousClock.Instant? in
                defer { s.lostAt = nil }
                if s.lostAt != nil { s.restoredAt = now }
                return s.lostAt
            }) else { return }
            events.networkWasRestored(after: now - lost)
        }
    }

    /// The outage behind a failure that is not an outage's error: a transfer cut (`truncated`,
    /// `connection`, `timeout`) while the network is gone or within `aftermath` of its return, when
    /// its connection died meanwhile. Returns the outage's number, nil when there is none.
    public func outage(behind error: FetchError) -> Int? {
        guard [.truncated, .connection, .timeout].contains(error.code) else { return nil }
        return state.withLock { s -> Int? in
            if s.lostAt != nil { return s.outages }
            if let restored = s.restoredAt, ContinuousClock.now - restored < aftermath { return s.outages }
            return nil
        }
    }

    /// What to do after `error` for a request to `host`; waits while the network is gone.
    /// - Parameters:
    ///   - hasFallback: a stored response may stand in for a failed request (the job is served from
    ///     the cache at once instead of waiting).
    ///   - cutByOutage: the failure is a transfer the outage cut (`outage(behind:)`): once the
    ///     network is there it is sent again, whatever the settling says.
    public func decide(after error: FetchError, host: String, hasFallback: Bool = false, cutByOutage: Bool = false) async -> Decision {
        guard error.isNetworkDown || cutByOutage else { return .retry }
        if cutByOutage, monitor.isReachable(host: host) { return .resend }
        if monitor.isReachable(host: host) {
            await waitForChange(atMost: settle)
            if monitor.isReachable(host: host) { return .retry }
        }
        if hasFallback { return .failNow }
        // From `network.lost`; a host whose own route went while the default one stayed counts from now.
        let deadline = (lostAt ?? .now) + maxWait
        while !monitor.isReachable(host: host) {
            let now = ContinuousClock.now
            if now >= deadline { return .giveUp }
            await waitForChange(atMost: deadline - now)
            if Task.isCancelled { return .retry }  // the caller's cancellation path takes over
        }
        return .resend
    }

    /// Returns at the monitor's next change, after `limit`, or when cancelled, whichever is first.
    private func waitForChange(atMost limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.monitor.nextChange() }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }
}
