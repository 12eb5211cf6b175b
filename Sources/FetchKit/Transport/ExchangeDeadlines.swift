import NIOCore

/// The deadlines of one exchange that the transports enforce themselves, on the connection's event
/// loop: the head must come within `read` of sending the request, no gap between body chunks may
/// exceed `read` (time in the session's callbacks doesn't count: progress is stamped after them),
/// and the whole exchange must end within `total`. While the `NetworkWaiter` says the network is
/// gone, a stall is the outage's, not the server's: it waits with the rest of the run, up to
/// `max_wait`. Both transports ask `check` at the times `untilNextCheck` gives.
struct ExchangeDeadlines: Sendable {
    enum Verdict {
        /// Fail the exchange with this error.
        case fail(FetchError)
        /// Check again after this long; `resetProgress`: count the stall from now (an outage).
        case checkAgain(after: Duration, resetProgress: Bool)
    }

    let timeouts: TransportTimeouts
    let url: String
    let networkWaiter: NetworkWaiter?
    let started: NIODeadline

    init(timeouts: TransportTimeouts, url: String, networkWaiter: NetworkWaiter?, started: NIODeadline = .now()) {
        self.timeouts = timeouts
        self.url = url
        self.networkWaiter = networkWaiter
        self.started = started
    }

    /// What to do at `now`, the last progress having been at `lastProgress`.
    func check(now: NIODeadline, lastProgress last: NIODeadline, hasHead: Bool) -> Verdict {
        if let total = timeouts.total, now - started >= .nanoseconds(total.inNanoseconds) {
            return .fail(FetchError(.timeout, "the request took longer than its total timeout of \(DurationGrammar.format(total))", url: url))
        }
        let read = TimeAmount.nanoseconds(timeouts.read.inNanoseconds)
        if let waiter = networkWaiter, waiter.monitor.status == .notReachable, let lost = waiter.lostAt {
            guard ContinuousClock.now - lost < waiter.maxWait else {
                return .fail(FetchError(.offline, "the network has been down longer than network.max_wait (\(DurationGrammar.format(waiter.maxWait))) during the transfer",
                                        url: url))
            }
            return .checkAgain(after: .seconds(1), resetProgress: now - last >= read)
        }
        if now - last >= read {
            let what = hasHead ? "no data for \(DurationGrammar.format(timeouts.read)) (read timeout)"
                : "no response within \(DurationGrammar.format(timeouts.read)) (read timeout)"
            return .fail(FetchError(.timeout, what, url: url))
        }
        return .checkAgain(after: untilNextCheck(last: last, now: now), resetProgress: false)
    }

    /// Until the read timeout would pass since `last`, or the total one since the start; with a
    /// network waiter at least every second (an outage's max_wait may end first). At least 1 ms.
    func untilNextCheck(last: NIODeadline, now: NIODeadline) -> Duration {
        var next = last + .nanoseconds(timeouts.read.inNanoseconds) - now
        if let total = timeouts.total { next = min(next, started + .nanoseconds(total.inNanoseconds) - now) }
        if networkWaiter != nil { next = min(next, .seconds(1)) }
        return .nanoseconds(max(1_000_000, next.nanoseconds))
    }
}
