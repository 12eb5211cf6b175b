import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// A connection `ConnectionPool` hands out: HTTP/1.1, one exchange at a time, or HTTP/2, any
/// number of exchanges at once on streams of their own.
protocol PooledConnection: AnyObject, Sendable {
    var channel: Channel { get }
    var key: ConnectionPool.Key { get }
    /// Serves many exchanges at once (HTTP/2): shared, never given back or waited for.
    var isMultiplexed: Bool { get }
    /// Sends `request` (in the form `isMultiplexed` says) and delivers the response to the
    /// callbacks; `completion` gets the body's byte count and whether the connection may take
    /// another request, or the error. Call it on the event loop. Returns an id for `cancel`.
    func execute(_ request: RequestMessage, deadlines: ExchangeDeadlines,
                 onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
                 onChunk: @escaping @Sendable (ByteBuffer) throws -> Void,
                 completion: @escaping @Sendable (Result<ExchangeFinished, Error>) -> Void) -> UInt64
    /// Ends exchange `id` with `error` if it is still running. Call it on the event loop.
    func cancel(_ id: UInt64, with error: Error)
    func close()
}

extension PooledConnection {
    var eventLoop: EventLoop { channel.eventLoop }
}

/// A request as a connection sends it: HTTP/1.1's bytes, head and body encoded once
/// (`HTTP1RequestEncoding`), with the method the response decoder needs; or the head and body an
/// HTTP/2 stream frames.
enum RequestMessage {
    case http1(bytes: ByteBuffer, isHead: Bool)
    case http2(head: HTTPRequestHead, body: ByteBuffer?)
}

/// `NIOTransport`'s connections, by host, port and TLS settings. HTTP/1.1: at most `perHost` open
/// (or opening) to one host at a time, kept alive; a request that finds them all busy waits for the
/// next one to come back, in order, and an idle connection on the caller's own event loop is
/// preferred, so a task running on that loop (the event loops are fetchctl's executor) keeps its
/// request, its response and its file writes on one thread. HTTP/2: one connection a host, shared
/// by all its requests. Which of the two an `https://` host speaks is known only once its first
/// connection's handshake is done (ALPN), so until then its requests wait for that connection
/// instead of opening more: a host that speaks HTTP/2 gets exactly one.
final class ConnectionPool: @unchecked Sendable {
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
        var connection: any PooledConnection
        var reused: Bool
    }

    enum Leased {
        case ready(Lease)
        case pending(EventLoopFuture<Lease>)
    }

    private enum HostProtocol { case unknown, http1, http2 }

    private struct Host {
        var idle: [any PooledConnection] = []
        /// The shared HTTP/2 connection, once open.
        var multiplexed: (any PooledConnection)?
        /// Open or being opened.
        var open = 0
        var waiters = CircularBuffer<EventLoopPromise<Lease>>()
        var spoken: HostProtocol
        /// Connections `preconnect` is opening that no request has claimed yet: a request waits
        /// for one of them rather than opening another.
        var preconnecting = 0
    }

    private let perHost: Int
    private let connectTimeout: Duration
    private let offersHTTP2: Bool
    /// The TLS contexts of `https://` keys, made before their first lease; the holder itself made
    /// at the first `https://` request, so that a plain-HTTP run never meets TLS's types (their
    /// first use costs the Swift runtime's conformance scans, on the way to the first request).
    var tlsContexts: TLSContexts {
        madeTLSContexts.withLock { made in
            if let made { return made }
            let contexts = TLSContexts(offersHTTP2: offersHTTP2)
            made = contexts
            return contexts
        }
    }
    private let madeTLSContexts = LockedBox<TLSContexts?>(nil)
    private let lock = AdaptiveLock()
    private var hosts: [Key: Host] = [:]  // guarded by lock
    /// HTTP/2 connections retired by a GOAWAY and not closed yet: no longer counted as open, closed
    /// at shutdown if the server hasn't closed them by then.
    private var retired: [ObjectIdentifier: any PooledConnection] = [:]  // guarded by lock
    private var isShutdown = false  // guarded by lock

    /// - Parameter offersHTTP2: `https://` connections offer HTTP/2 in ALPN (`http_version: auto`).
    init(perHost: Int, connectTimeout: Duration, offersHTTP2: Bool) {
        self.perHost = max(1, perHost)
        self.connectTimeout = connectTimeout
        self.offersHTTP2 = offersHTTP2
    }

    private func newHost(_ key: Key) -> Host {
        Host(spoken: key.tls != nil && offersHTTP2 ? .unknown : .http1)
    }

    /// Runs `body` on `key`'s entry in place (made if missing), under the lock. In place: a copy
    /// taken out and stored back shared its idle list with the dictionary's, so taking a
    /// connection from it copied the whole list, and hashed the key twice.
    private func withHost<T>(_ key: Key, _ body: (inout Host) -> T) -> T {
        body(&hosts[key, default: newHost(key)])
    }

    /// The host's HTTP/2 connection; an idle connection to `key` (one on `eventLoop` first); a new
    /// one when fewer than `perHost` are open (and the protocol is known); or the next one another
    /// request gives back.
    func lease(_ key: Key, on eventLoop: EventLoop) -> Leased {
        enum Action { case reuse(any PooledConnection), open, wait(EventLoopPromise<Lease>), shutDown }
        let action = lock.withLock { () -> Action in
            guard !isShutdown else { return .shutDown }
            return withHost(key) { host -> Action in
                if let shared = host.multiplexed { return .reuse(shared) }
                if !host.idle.isEmpty {
                    let index = host.idle.lastIndex { $0.eventLoop === eventLoop } ?? host.idle.count - 1
                    return .reuse(host.idle.remove(at: index))
                }
                if host.preconnecting > 0 {
                    host.preconnecting -= 1
                    let promise = eventLoop.makePromise(of: Lease.self)
                    host.waiters.append(promise)
                    return .wait(promise)
                }
                // Until a connection has said which protocol the host speaks (or while its one HTTP/2
                // connection is being replaced), one connection at a time is opened.
                let opensOneAtATime = host.spoken != .http1
                if host.open < (opensOneAtATime ? 1 : perHost) {
                    host.open += 1
                    return .open
                }
                let promise = eventLoop.makePromise(of: Lease.self)
                host.waiters.append(promise)
                return .wait(promise)
            }
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
            return .pending(eventLoop.makeFailedFuture(ConnectionClosed()))
        }
    }

    /// Opens one connection to `key` if none is open or opening, and keeps it as an idle one (or
    /// hands it to a request that asked meanwhile). A connection that fails is dropped silently:
    /// the next request opens its own and reports what happens. It is counted at once and opened
    /// on `eventLoop`, after `preparing`.
    func preconnect(_ key: Key, on eventLoop: EventLoop, preparing: (@Sendable () -> Void)? = nil) {
        let opens = lock.withLock { () -> Bool in
            guard !isShutdown else { return false }
            return withHost(key) { host in
                guard host.open == 0 else { return false }
                host.open += 1
                host.preconnecting += 1
                return true
            }
        }
        guard opens else { return }
        eventLoop.execute { [self] in
            preparing?()
            open(key, on: eventLoop, for: nil)
        }
    }

    /// Gives back an HTTP/1.1 connection whose exchange ended with the connection reusable: to the
    /// first waiter, or to the idle list. An HTTP/2 connection is never given back.
    func release(_ connection: any PooledConnection) {
        guard !connection.isMultiplexed else { return }
        let waiter = lock.withLock { () -> EventLoopPromise<Lease>?? in
            guard !isShutdown else { return .some(nil) }
            return withHost(connection.key) { host in
                if let waiter = host.waiters.popFirst() { return waiter }
                host.idle.append(connection)
                return nil
            }
        }
        switch waiter {
        case .some(.some(let promise)): promise.succeed(Lease(connection: connection, reused: true))
        case .some(.none): connection.close()  // shut down
        case .none: break
        }
    }

    /// Stops handing out an HTTP/2 connection whose server sent GOAWAY: its streams in flight go
    /// on, the next request opens a new connection.
    private func goingAway(_ connection: any PooledConnection) {
        lock.withLock {
            guard hosts[connection.key]?.multiplexed === connection else { return }
            hosts[connection.key]?.multiplexed = nil
            hosts[connection.key]?.open -= 1
            retired[ObjectIdentifier(connection)] = connection
        }
    }

    /// Forgets a closed connection; a waiter, if any, gets a new one in its place.
    private func closed(_ connection: any PooledConnection) {
        let waiter = lock.withLock { () -> EventLoopPromise<Lease>? in
            if retired.removeValue(forKey: ObjectIdentifier(connection)) != nil { return nil }  // forgotten already
            guard hosts[connection.key] != nil else { return nil }
            let isShutdown = isShutdown
            return withHost(connection.key) { host in
                if let index = host.idle.firstIndex(where: { $0 === connection }) { host.idle.remove(at: index) }
                if host.multiplexed === connection { host.multiplexed = nil }
                host.open -= 1
                guard !isShutdown, let waiter = host.waiters.popFirst() else { return nil }
                host.open += 1
                return waiter
            }
        }
        if let waiter { open(connection.key, on: waiter.futureResult.eventLoop, for: waiter) }
    }

    /// Opens a connection for `promise`, or with nil for `preconnect`: the connection then goes to
    /// the first request waiting (one that found it opening), else to the idle ones.
    private func open(_ key: Key, on eventLoop: EventLoop, for promise: EventLoopPromise<Lease>?) {
        let connected: EventLoopFuture<any PooledConnection>
        if let tls = key.tls, tlsContexts.made(for: tls) == nil {
            connected = eventLoop.makeFailedFuture(FetchError(.tls, "no TLS context was made for this connection"))
        } else {
            connected = ConnectionOpener.open(key, security: key.tls.flatMap(tlsContexts.made(for:)), on: eventLoop, timeout: connectTimeout,
                                              onGoAway: { [weak self] in self?.goingAway($0) }, onClose: { [weak self] in self?.closed($0) })
        }
        connected.whenComplete { [self] result in
            switch result {
            case .success(let connection):
                // The host's protocol is known now. HTTP/2: every waiter shares this connection.
                // HTTP/1.1: the waiters held back while it was unknown get connections of their own.
                var promise = promise
                let (shared, opening) = lock.withLock { () -> ([EventLoopPromise<Lease>], [EventLoopPromise<Lease>]) in
                    guard var host = hosts[key] else { return ([], []) }
                    defer { hosts[key] = host }
                    if promise == nil, host.preconnecting > 0 { host.preconnecting -= 1 }
                    if connection.isMultiplexed, !isShutdown {
                        host.spoken = .http2
                        host.multiplexed = connection
                        defer { host.waiters.removeAll() }
                        return (Array(host.waiters), [])
                    }
                    host.spoken = .http1
                    if promise == nil, !isShutdown {
                        // A preconnected connection: to the request that has waited longest, else idle.
                        if let first = host.waiters.popFirst() { promise = first } else { host.idle.append(connection) }
                    }
                    var opening: [EventLoopPromise<Lease>] = []
                    while host.open < perHost, !isShutdown, let waiter = host.waiters.popFirst() {
                        host.open += 1
                        opening.append(waiter)
                    }
                    return ([], opening)
                }
                // An HTTP/2 connection that opened after `shutdown` is closed at once (nothing would
                // close it later); its request fails as any request after `shutdown` does.
                if lock.withLock({ isShutdown }), connection.isMultiplexed || promise == nil {
                    connection.close()
                    promise?.fail(ConnectionClosed())
                    return
                }
                promise?.succeed(Lease(connection: connection, reused: false))
                for waiter in shared { waiter.succeed(Lease(connection: connection, reused: false)) }
                for waiter in opening { open(key, on: waiter.futureResult.eventLoop, for: waiter) }
            case .failure(let error):
                // This request fails; a waiter behind it tries a connection of its own.
                let next = lock.withLock { () -> EventLoopPromise<Lease>? in
                    hosts[key]?.open -= 1
                    if promise == nil, hosts[key]?.preconnecting ?? 0 > 0 { hosts[key]?.preconnecting -= 1 }
                    guard !isShutdown, let waiter = hosts[key]?.waiters.popFirst() else { return nil }
                    hosts[key]?.open += 1
                    return waiter
                }
                promise?.fail(error)
                if let next { open(key, on: next.futureResult.eventLoop, for: next) }
            }
        }
    }

    /// Closes the idle and the HTTP/2 connections and fails the waiters; HTTP/1.1 connections in
    /// use close when their exchange ends.
    func shutdown() async {
        let (idle, waiters) = lock.withLock { () -> ([any PooledConnection], [EventLoopPromise<Lease>]) in
            isShutdown = true
            let idle = hosts.values.flatMap { $0.idle + ($0.multiplexed.map { [$0] } ?? []) } + Array(retired.values)
            let waiters = hosts.values.flatMap { Array($0.waiters) }
            for key in hosts.keys {
                hosts[key]?.idle = []
                hosts[key]?.multiplexed = nil
                hosts[key]?.waiters = []
            }
            return (idle, waiters)
        }
        for waiter in waiters { waiter.fail(ConnectionClosed()) }
        for connection in idle { try? await connection.channel.close() }
    }
}
