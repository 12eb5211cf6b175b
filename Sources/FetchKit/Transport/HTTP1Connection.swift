import NIOCore
import NIOHTTP1

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
/// `HTTP1RequestEncoding` made and reads the response parts NIO's decoder makes of what comes back.
/// The pipeline has no encoder or header validator (the encoding did their work), and the decoder
/// is told each request's method by this handler instead of watching the writes go by
/// (`ResponseDecoding`): a request passes no handler on its way to the socket but TLS.
final class HTTP1ExchangeHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = ByteBuffer

    let core = ExchangeCore()
    private let decoder: HTTPResponseDecoder

    /// The heads the decoder is told of: it reads only the method, to know that the response to a
    /// `HEAD` has no body whatever its fields say. Made once, not per request.
    private static let headRequest = HTTPRequestHead(version: .http1_1, method: .HEAD, uri: "/")
    private static let otherRequest = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")

    /// - Parameter decoder: the decoder in this channel's pipeline (in `ResponseDecoding`).
    init(decoder: HTTPResponseDecoder) {
        self.decoder = decoder
    }

    func handlerAdded(context: ChannelHandlerContext) { core.added(context) }
    func handlerRemoved(context: ChannelHandlerContext) { core.removed() }

    func start(_ bytes: ByteBuffer, isHead: Bool, exchange: ExchangeCore.Exchange) -> UInt64 {
        guard let (id, context) = core.begin(exchange) else { return core.currentID }
        decoder.write(data: .head(isHead ? Self.headRequest : Self.otherRequest))
        context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
        core.sent()
        return id
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        core.read { _ in HTTP1Framing.response(part) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        core.inactive()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) { core.caught(error, context: context) }

    func cancel(_ id: UInt64, with error: Error) { core.cancel(id, with: error) }
}

/// NIO's HTTP/1 response decoder, in a `ByteToMessageHandler` that does not watch the channel's
/// writes: `HTTPResponseDecoder` itself is a write-observing decoder, and its handler then sat on
/// the outbound path too, unwrapping every request part with a dynamic cast to note the method.
/// `HTTP1ExchangeHandler` tells the decoder (a class, shared) each request's method instead.
struct ResponseDecoding: ByteToMessageDecoder {
    typealias InboundOut = HTTPClientResponsePart

    let decoder: HTTPResponseDecoder

    func decoderAdded(context: ChannelHandlerContext) { decoder.decoderAdded(context: context) }
    func decoderRemoved(context: ChannelHandlerContext) { decoder.decoderRemoved(context: context) }

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        try decoder.decode(context: context, buffer: &buffer)
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decoder.decodeLast(context: context, buffer: &buffer, seenEOF: seenEOF)
    }
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
