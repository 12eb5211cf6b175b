import NIOConcurrencyHelpers
import NIOCore

/// `HTTP1Transport`'s keep-alive connections, by host and port: at most `perHost` open (or
/// opening) to one host at a time; a request that finds them all busy waits for the next one to
/// come back, in order. An idle connection on the caller's own event loop is preferred, so a task
/// running on that loop (the event loops are fetchctl's executor) keeps its request, its response
/// and its file writes on one thread.
final class HTTP1ConnectionPool: @unchecked Sendable {
    struct Key: Hashable, Sendable {
        var host: String
        var port: Int
        /// The `tls` settings of an `https://` connection (connections with different settings are
        /// never shared); nil for plain `http://`.
        var tls: TLSOptions?
    }

    /// What `lease` hands out: the connection, and whether it served a request before (a reused
    /// connection may have been closed by the server a moment ago).
    struct Lease {
        var connection: HTTP1Connection
        var reused: Bool
    }

    enum Leased {
        case ready(Lease)
        case pending(EventLoopFuture<Lease>)
    }

    private struct Host {
        var idle: [HTTP1Connection] = []
        /// Open or being opened.
        var open = 0
        var waiters = CircularBuffer<EventLoopPromise<Lease>>()
    }

    private let perHost: Int
    private let connectTimeout: Duration
    /// The TLS contexts of `https://` keys, made before their first lease.
    let tlsContexts = TLSContexts()
    private let lock = NIOLock()
    private var hosts: [Key: Host] = [:]  // guarded by lock
    private var isShutdown = false  // guarded by lock

    init(perHost: Int, connectTimeout: Duration) {
        self.perHost = max(1, perHost)
        self.connectTimeout = connectTimeout
    }

    /// An idle connection to `key` (one on `eventLoop` first), a new one when fewer than `perHost`
    /// are open, or the next one another request gives back.
    func lease(_ key: Key, on eventLoop: EventLoop) -> Leased {
        enum Action { case reuse(HTTP1Connection), open, wait(EventLoopPromise<Lease>), shutDown }
        let action = lock.withLock { () -> Action in
            guard !isShutdown else { return .shutDown }
            var host = hosts[key, default: Host()]
            defer { hosts[key] = host }
            if !host.idle.isEmpty {
                let index = host.idle.lastIndex { $0.eventLoop === eventLoop } ?? host.idle.count - 1
                return .reuse(host.idle.remove(at: index))
            }
            if host.open < perHost {
                host.open += 1
                return .open
            }
            let promise = eventLoop.makePromise(of: Lease.self)
            host.waiters.append(promise)
            return .wait(promise)
        }
        switch action {
        case .reuse(let connection):
            return .ready(Lease(connection: connection, reused: true))
        case .open:
            let promise = eventLoop.makePromise(of: Lease.self)
            open(key, on: eventLoop, for: promise)
            return .pending(promise.futureResult)
        case .wait(let promise):
            return .pending(promise.futureResult)
        case .shutDown:
            return .pending(eventLoop.makeFailedFuture(HTTP1ConnectionClosed()))
        }
    }

    /// Gives back a connection whose exchange ended with the connection reusable: to the first
    /// waiter, or to the idle list.
    func release(_ connection: HTTP1Connection) {
        let waiter = lock.withLock { () -> EventLoopPromise<Lease>?? in
            guard !isShutdown else { return .some(nil) }
            if let waiter = hosts[connection.key]?.waiters.popFirst() { return waiter }
            hosts[connection.key, default: Host()].idle.append(connection)
            return nil
        }
        switch waiter {
        case .some(.some(let promise)): promise.succeed(Lease(connection: connection, reused: true))
        case .some(.none): connection.close()  // shut down
        case .none: break
        }
    }

    /// Forgets a closed connection; a waiter, if any, gets a new one in its place.
    private func closed(_ connection: HTTP1Connection) {
        let waiter = lock.withLock { () -> EventLoopPromise<Lease>? in
            guard var host = hosts[connection.key] else { return nil }
            defer { hosts[connection.key] = host }
            if let index = host.idle.firstIndex(where: { $0 === connection }) { host.idle.remove(at: index) }
            host.open -= 1
            guard !isShutdown, let waiter = host.waiters.popFirst() else { return nil }
            host.open += 1
            return waiter
        }
        if let waiter { open(connection.key, on: waiter.futureResult.eventLoop, for: waiter) }
    }

    private func open(_ key: Key, on eventLoop: EventLoop, for promise: EventLoopPromise<Lease>) {
        let connected: EventLoopFuture<HTTP1Connection>
        if let tls = key.tls, tlsContexts.made(for: tls) == nil {
            connected = eventLoop.makeFailedFuture(FetchError(.tls, "no TLS context was made for this connection"))
        } else {
            connected = HTTP1Connection.connect(to: key, security: key.tls.flatMap(tlsContexts.made(for:)), on: eventLoop, timeout: connectTimeout) {
                [weak self] in self?.closed($0)
            }
        }
        connected.whenComplete { [self] result in
                switch result {
                case .success(let connection):
                    promise.succeed(Lease(connection: connection, reused: false))
                case .failure(let error):
                    // This request fails; a waiter behind it tries a connection of its own.
                    let next = lock.withLock { () -> EventLoopPromise<Lease>? in
                        hosts[key]?.open -= 1
                        guard !isShutdown, let waiter = hosts[key]?.waiters.popFirst() else { return nil }
                        hosts[key]?.open += 1
                        return waiter
                    }
                    promise.fail(error)
                    if let next { open(key, on: next.futureResult.eventLoop, for: next) }
                }
            }
    }

    /// Closes the idle connections and fails the waiters; connections in use close when their
    /// exchange ends.
    func shutdown() async {
        let (idle, waiters) = lock.withLock { () -> ([HTTP1Connection], [EventLoopPromise<Lease>]) in
            isShutdown = true
            let idle = hosts.values.flatMap(\.idle)
            let waiters = hosts.values.flatMap { Array($0.waiters) }
            for key in hosts.keys {
                hosts[key]?.idle = []
                hosts[key]?.waiters = []
            }
            return (idle, waiters)
        }
        for waiter in waiters { waiter.fail(HTTP1ConnectionClosed()) }
        for connection in idle { try? await connection.channel.close() }
    }
}
