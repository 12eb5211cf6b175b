import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// Opens `NIOTransport`'s connections: TCP, then for `https://` the TLS handshake, the pin check and
/// the protocol ALPN chose, HTTP/2 (`h2`) or HTTP/1.1. A connection is handed to the pool only when
/// all of that is done, so a server whose key matches none of the pins sees the handshake and not
/// one request byte. The connect timeout covers the TCP connection and the handshake together, as
/// curl's `--connect-timeout` does.
enum ConnectionOpener {
    /// What the handshake settled: the handler an HTTP/1.1 connection runs its exchanges on, or
    /// the HTTP/2 connection (a handler of its own, which runs its streams).
    private enum Negotiated {
        case http1(HTTP1ExchangeHandler)
        case http2(HTTP2Connection)
    }

    /// The most one read from a socket takes (NIO's default is 64 KiB). A large body arrives faster
    /// than it is written out, so a read takes what the socket holds, and fewer, larger reads and
    /// writes move it faster: a 1 GiB download took 0.73× curl's time instead of 0.99× (95 KiB a
    /// read on loopback; BENCHMARKS.md, "Reads of a large body"). Reads start at 2 KiB and grow
    /// only while they come back full, so a connection of small responses stays small.
    static let largestRead = 1 << 20

    /// Opens a connection to `key` on `eventLoop`; `onClose` is told once when it closes, and
    /// `onGoAway` when an HTTP/2 server says it takes no new streams on it (GOAWAY).
    static func open(_ key: ConnectionPool.Key, security: TLSContexts.Security?, on eventLoop: EventLoop, timeout: Duration,
                     onGoAway: @escaping @Sendable (any PooledConnection) -> Void,
                     onClose: @escaping @Sendable (any PooledConnection) -> Void) -> EventLoopFuture<any PooledConnection> {
        let deadline = NIODeadline.now() + .nanoseconds(timeout.inNanoseconds)
        let negotiated = eventLoop.makePromise(of: Negotiated.self)
        let address = try? SocketAddress(ipAddress: key.host, port: key.port)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(.nanoseconds(timeout.inNanoseconds))
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: Self.largestRead))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    guard let security else {
                        negotiated.succeed(.http1(try addHTTP1(to: channel)))
                        return
                    }
                    // SNI and the name check take a host name; for an IP address NIOSSL checks the
                    // certificate against the address connected to.
                    try pipeline.addHandler(NIOSSLClientHandler(context: security.context, serverHostname: address != nil ? nil : key.host))
                    // Once the handshake is done: the pins, then the protocol's handlers, added
                    // before anything that arrived with the handshake (an HTTP/2 server's SETTINGS)
                    // is read on.
                    try pipeline.addHandler(TLSNegotiationHandler(handshake: negotiated) { channel, negotiatedProtocol in
                        if let pins = security.pins { try check(pins, on: channel) }
                        if negotiatedProtocol == "h2" {
                            negotiated.succeed(.http2(try addHTTP2(to: channel, key: key)))
                        } else {
                            negotiated.succeed(.http1(try addHTTP1(to: channel)))
                        }
                    })
                }
            }
        let connected: EventLoopFuture<Channel>
        if let address {
            // An IP address needs no resolver, as with curl: NIO's Happy Eyeballs asks getaddrinfo on
            // its thread pool even for one (the pool's first use made it, and the first connection of
            // a run left about 9 ms after it was asked for).
            connected = bootstrap.connect(to: address).flatMapErrorThrowing { error in
                guard error is IOError else { throw error }
                throw DirectConnectFailure(host: key.host, port: key.port, underlying: error)
            }
        } else {
            connected = bootstrap.connect(host: key.host, port: key.port)
        }
        connected.whenFailure { negotiated.fail($0) }  // no channel: the promise must still end
        return connected.flatMap { channel in
            let timer = security == nil ? nil : eventLoop.scheduleTask(deadline: deadline) {
                negotiated.fail(TLSHandshakeTimeout())
                channel.close(promise: nil)
            }
            return negotiated.futureResult.flatMapErrorThrowing { error in
                timer?.cancel()
                channel.close(promise: nil)
                throw error
            }.map { negotiated -> any PooledConnection in
                timer?.cancel()
                let connection: any PooledConnection
                switch negotiated {
                case .http1(let handler): connection = HTTP1Connection(channel: channel, key: key, handler: handler)
                case .http2(let http2):
                    connection = http2
                    http2.onGoAway = { [weak http2] in if let http2 { onGoAway(http2) } }
                }
                channel.closeFuture.whenComplete { _ in onClose(connection) }
                return connection
            }
        }
    }

    /// A connection to an IP address that failed (refused, unreachable): the host and port it was
    /// for, as NIO's `NIOConnectionError` says them for a host name.
    struct DirectConnectFailure: Error {
        let host: String
        let port: Int
        let underlying: any Error
    }

    /// The exchange handler alone: it writes requests as bytes (`HTTP1RequestEncoding`) and reads
    /// responses from bytes (`HTTP1ResponseParser`).
    private static func addHTTP1(to channel: Channel) throws -> HTTP1ExchangeHandler {
        let handler = HTTP1ExchangeHandler()
        try channel.pipeline.syncOperations.addHandler(handler)
        return handler
    }

    /// NIOHTTP2's handler without its multiplexer: its frames and events go to the connection,
    /// which runs the streams itself. Push is off; the initial stream window is the one the
    /// connection keeps open (`HTTP2Connection.streamWindow`).
    private static func addHTTP2(to channel: Channel, key: ConnectionPool.Key) throws -> HTTP2Connection {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = nioDefaultSettings + [
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .initialWindowSize, value: HTTP2Connection.streamWindow),
        ]
        let connection = HTTP2Connection(channel: channel, key: key)
        try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: configuration))
        try channel.pipeline.syncOperations.addHandler(connection)
        return connection
    }

    /// The server's certificate must carry one of the pinned keys (`PublicKeyPins`).
    private static func check(_ pins: PublicKeyPins, on channel: Channel) throws {
        let leaf = try? channel.pipeline.syncOperations.handler(type: NIOSSLHandler.self).peerCertificate
        guard let leaf, pins.matches(leaf) else {
            throw PinMismatch(presented: leaf.flatMap { try? PublicKeyPins.pin(of: $0) })
        }
    }
}

/// The TLS handshake of a new connection did not finish within the connect timeout.
struct TLSHandshakeTimeout: Error, CustomStringConvertible {
    var description: String { "TLS handshake timed out" }
}

/// A new TLS connection until its protocol is settled: fails the connection's promise when the
/// handshake fails or the connection closes before it is done; once the handshake completes, runs
/// `settle` with the protocol ALPN negotiated (nil: none), which adds the protocol's handlers, and
/// removes itself. `settle` runs within the handshake's event, before NIOSSL passes on any data that
/// came with it, so no read reaches the pipeline before the handlers that read it.
///
/// One handler where SwiftNIO's `ApplicationProtocolNegotiationHandler` and a second one watching
/// for failures were two: the runtime walks every conformance record in the binary the first time a
/// handler type is added to a pipeline (inbound? outbound?) and removed (removable?), about 400,000
/// instructions each, on the connection's loop between the `connect` and the first request; the
/// two types made six walks, this one three.
private final class TLSNegotiationHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = NIOAny

    private let fail: (Error) -> Void
    private let settle: (Channel, String?) throws -> Void
    private var settled = false

    init<Value>(handshake: EventLoopPromise<Value>, settle: @escaping (Channel, String?) throws -> Void) {
        fail = { handshake.fail($0) }
        self.settle = settle
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard !settled, case TLSUserEvent.handshakeCompleted(let negotiatedProtocol) = event else {
            return context.fireUserInboundEventTriggered(event)
        }
        settled = true
        // Passed on first, as SwiftNIO's handler does: the protocol's handlers don't see it.
        context.fireUserInboundEventTriggered(event)
        do {
            try settle(context.channel, negotiatedProtocol)
        } catch {
            fail(error)
            context.close(promise: nil)
            return
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(ConnectionClosed())
        context.fireChannelInactive()
    }
}
