import NIOCore

/// One deadline timer for all the streams of an HTTP/2 connection. Each stream runs one exchange
/// on an `ExchangeCore` of its own, so a timer per core was a timer scheduled and cancelled for
/// every request, on the one loop that carries the whole connection (about 5,000 instructions a
/// job there). Here a core registers when it needs a check by some time; the timer fires at the
/// earliest such time and hands every registered core its check, and each core still running
/// registers again for its next one. Touched only on the connection's event loop.
final class SharedWatchdog: @unchecked Sendable {
    private let eventLoop: EventLoop
    private var cores: [ObjectIdentifier: ExchangeCore] = [:]
    private var timer: Scheduled<Void>?
    private var due: NIODeadline?

    init(eventLoop: EventLoop) {
        self.eventLoop = eventLoop
    }

    /// `core` needs a check by `deadline`.
    func arm(_ core: ExchangeCore, by deadline: NIODeadline) {
        cores[ObjectIdentifier(core)] = core
        if let due, timer != nil, due <= deadline { return }
        timer?.cancel()
        due = deadline
        timer = eventLoop.scheduleTask(deadline: deadline) { [self] in fire() }
    }

    /// `core` is gone (its stream closed): it needs no more checks.
    func remove(_ core: ExchangeCore) {
        guard cores.removeValue(forKey: ObjectIdentifier(core)) != nil, cores.isEmpty else { return }
        timer?.cancel()
        timer = nil
        due = nil
    }

    private func fire() {
        timer = nil
        due = nil
        let registered = cores.values
        cores.removeAll(keepingCapacity: true)
        for core in registered { core.watchdogFired() }
    }
}
