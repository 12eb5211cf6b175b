import NIOCore
import NIOHTTP1
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 connection of `NIOTransport`, shared by every request to its host: each exchange is a
/// stream of its own, opened with NIOHTTP2's multiplexer, turned into HTTP/1-style parts by
/// NIOHTTP2's client codec and run by an `ExchangeHandler` as on an HTTP/1.1 connection. Streams
/// beyond the server's `SETTINGS_MAX_CONCURRENT_STREAMS` wait in NIOHTTP2 until one ends. A failed
/// or cancelled exchange resets its stream; the connection and the other streams go on.
final class HTTP2Connection: PooledConnection, @unchecked Sendable {
    let channel: Channel
    let key: ConnectionPool.Key
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    /// The exchanges in progress, by id, and those cancelled before their stream opened. Touched
    /// only on the channel's event loop.
    private var exchanges: [UInt64: ExchangeHandler] = [:]
    private var cancelled: [UInt64: Error] = [:]
    private var lastID: UInt64 = 0

    var isMultiplexed: Bool { true }

    init(channel: Channel, key: ConnectionPool.Key, multiplexer: NIOHTTP2Handler.StreamMultiplexer) {
        self.channel = channel
        self.key = key
        self.multiplexer = multiplexer
    }

    /// Opens a stream and runs the exchange on it; `completion` gets the body's byte count, or the
    /// error. Call it on the event loop. Returns an id for `cancel`.
    func execute(_ head: HTTPRequestHead, body: ByteBuffer?, deadlines: ExchangeDeadlines,
                 onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
                 onChunk: @escaping @Sendable (ByteBuffer) throws -> Void,
                 completion: @escaping @Sendable (Result<ExchangeHandler.Finished, Error>) -> Void) -> UInt64 {
        lastID &+= 1
        let id = lastID
        let handler = ExchangeHandler()
        exchanges[id] = handler
        let opened = channel.eventLoop.makePromise(of: Channel.self)
        multiplexer.createStreamChannel(promise: opened) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(PathNotIndexed())
                try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                try stream.pipeline.syncOperations.addHandler(handler)
            }
        }
        let ended: @Sendable (Result<ExchangeHandler.Finished, Error>) -> Void = { [self] result in
            exchanges[id] = nil
            cancelled[id] = nil
            completion(result)
        }
        opened.futureResult.whenComplete { [self] result in
            switch result {
            case .success(let stream):
                if let error = cancelled[id] {
                    stream.close(promise: nil)
                    ended(.failure(error))
                    return
                }
                _ = handler.start(head, body: body, exchange: ExchangeHandler.Exchange(deadlines: deadlines, onHead: onHead, onChunk: onChunk,
                                                                                      completion: ended))
            case .failure(let error):
                // The connection is closing or was told to go away: no stream, no byte sent.
                ended(.failure(TransportFailure(underlying: error, afterHead: false)))
            }
        }
        return id
    }

    /// Ends exchange `id` with `error` if it is still running (its stream is reset). Call it on
    /// the event loop.
    func cancel(_ id: UInt64, with error: Error) {
        guard let handler = exchanges[id] else { return }
        cancelled[id] = error
        handler.cancel(ExchangeHandler.firstID, with: error)
    }

    func close() {
        channel.close(promise: nil)
    }

    /// The server did not process the stream: it was opened on a connection already going away
    /// (after a GOAWAY), or refused (REFUSED_STREAM, or beyond the GOAWAY's last stream id).
    static func wasRefused(_ error: Error) -> Bool {
        if error is NIOHTTP2Errors.CreatedStreamAfterGoaway || error is NIOHTTP2Errors.IOOnClosedConnection { return true }
        if let closed = error as? NIOHTTP2Errors.StreamClosed { return closed.errorCode == .refusedStream }
        if let reset = error as? NIOHTTP2Errors.StreamError { return wasRefused(reset.baseError) }
        return false
    }
}

/// Sends a request's `:path` as a literal that HPACK does not add to its dynamic table. NIOHTTP2's
/// codec marks every field indexable, and a batch's paths all differ: each one went into the
/// table, pushed out the fields that do repeat (`user-agent`, `:authority`), and every lookup
/// then walked a table full of paths, a third of a request's HTTP/2 cost. nghttp2 (curl) does not
/// index `:path` either.
private final class PathNotIndexed: ChannelOutboundHandler, RemovableChannelHandler, Sendable {
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .headers(var payload) = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        var headers = HPACKHeaders()
        headers.reserveCapacity(payload.headers.count)
        for (name, value, indexing) in payload.headers {
            headers.add(name: name, value: value, indexing: name == ":path" ? .nonIndexable : indexing)
        }
        payload.headers = headers
        context.write(wrapOutboundOut(.headers(payload)), promise: promise)
    }
}
