import NIOCore

/// One keep-alive HTTP/1.1 connection of `NIOTransport`, running one exchange at a time. All of
/// its state lives on the channel's event loop: the request is written, the head and every body
/// chunk go straight to the session's callbacks as they are decoded, and the exchange's deadlines
/// are checked by a timer on the same loop. Nothing crosses a thread until the exchange ends.
final class HTTP1Connection: PooledConnection, @unchecked Sendable {
    let channel: Channel
    let key: ConnectionPool.Key
    private let handler: HTTP1ExchangeHandler

    var isMultiplexed: Bool { false }

    init(channel: Channel, key: ConnectionPool.Key, handler: HTTP1ExchangeHandler) {
        self.channel = channel
        self.key = key
        self.handler = handler
    }

    /// Sends `request`'s bytes and delivers the response to the callbacks; `completion` gets the
    /// body's byte count and whether the connection may take another request, or the error. Call
    /// it on the event loop. Returns an id for `cancel`.
    func execute(_ request: RequestMessage, deadlines: ExchangeDeadlines,
                 onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
                 onChunk: @escaping @Sendable (ByteBuffer) throws -> Void,
                 completion: @escaping @Sendable (Result<ExchangeFinished, Error>) -> Void) -> UInt64 {
        guard case .http1(let bytes, let isHead) = request else {
            completion(.failure(TransportFailure(underlying: ConnectionClosed(), afterHead: false)))
            return 0
        }
        return handler.start(bytes, isHead: isHead, exchange: ExchangeCore.Exchange(deadlines: deadlines, onHead: onHead, onChunk: onChunk,
                                                                                  completion: completion))
    }

    /// Ends exchange `id` with `error` if it is still running, closing the connection. Call it on
    /// the event loop.
    func cancel(_ id: UInt64, with error: Error) {
        handler.cancel(id, with: error)
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// `ExchangeCore` on an HTTP/1.1 connection: writes each request as the bytes
/// `HTTP1RequestEncoding` made and reads its response from the bytes that come back
/// (`HTTP1ResponseParser`). It is the only handler on the connection but TLS: a request goes
/// straight to the socket, and the response's bytes come straight from it.
final class HTTP1ExchangeHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let core = ExchangeCore()
    private var parser = HTTP1ResponseParser()

    func handlerAdded(context: ChannelHandlerContext) { core.added(context) }
    func handlerRemoved(context: ChannelHandlerContext) { core.removed() }

    func start(_ bytes: ByteBuffer, isHead: Bool, exchange: ExchangeCore.Exchange) -> UInt64 {
        guard let (id, context) = core.begin(exchange) else { return core.currentID }
        parser.expectResponse(toHead: isHead)
        context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
        core.sent()
        return id
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard core.isExchanging else {
            // Bytes no request asked for (or the rest of a failed exchange's response): the
            // connection is out of step with its requests, and is not used again.
            context.close(promise: nil)
            return
        }
        core.read { _ in try parser.read(&buffer) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A body delimited by the close is complete now; anything else cut short fails.
        if let end = parser.closed() { core.read { _ in end } }
        core.inactive()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) { core.caught(error, context: context) }

    func cancel(_ id: UInt64, with error: Error) { core.cancel(id, with: error) }
}

/// A transport failure, as opposed to an error the session's callbacks threw: classified by
/// `NIOTransport` into a `FetchError`.
struct TransportFailure: Error {
    var underlying: Error
    /// The response head had arrived.
    var afterHead: Bool
}

/// The connection closed under an exchange.
struct ConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the connection was closed" }
}
