import NIOCore
import NIOHTTP1
import NIOSSL

/// One keep-alive HTTP/1.1 connection of `NIOTransport`, running one exchange at a time. All of
/// its state lives on the channel's event loop: the request is written, the head and every body
/// chunk go straight to the session's callbacks as they are decoded, and the exchange's deadlines
/// are checked by a timer on the same loop. Nothing crosses a thread until the exchange ends.
final class HTTP1Connection: PooledConnection, @unchecked Sendable {
    let channel: Channel
    let key: ConnectionPool.Key
    private let handler: ExchangeHandler

    var isMultiplexed: Bool { false }

    init(channel: Channel, key: ConnectionPool.Key, handler: ExchangeHandler) {
        self.channel = channel
        self.key = key
        self.handler = handler
    }

    /// Sends `head` (and `body`) and delivers the response to the callbacks; `completion` gets the
    /// body's byte count and whether the connection may take another request, or the error. Call
    /// it on the event loop. Returns an id for `cancel`.
    func execute(_ head: HTTPRequestHead, body: ByteBuffer?, deadlines: ExchangeDeadlines,
                 onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
                 onChunk: @escaping @Sendable (ByteBuffer) throws -> Void,
                 completion: @escaping @Sendable (Result<ExchangeHandler.Finished, Error>) -> Void) -> UInt64 {
        handler.start(head, body: body, exchange: ExchangeHandler.Exchange(deadlines: deadlines, onHead: onHead, onChunk: onChunk,
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

/// Runs one exchange after another on a channel that speaks HTTP/1-style parts: an HTTP/1.1
/// connection (NIO's HTTP/1 encoder and decoder sit before it), or one HTTP/2 stream (behind
/// NIOHTTP2's HTTP/1 codec). Unchecked: every member is touched only on the channel's event loop.
final class ExchangeHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    struct Finished {
        var received: Int64
        /// The response allows another request on the connection.
        var keepAlive: Bool
        var status: Int
        var expectedLength: Int64?
    }

    struct Exchange {
        var deadlines: ExchangeDeadlines
        var onHead: @Sendable (TransportResponseHead) throws -> Void
        var onChunk: @Sendable (ByteBuffer) throws -> Void
        var completion: @Sendable (Result<Finished, Error>) -> Void
        var id: UInt64 = 0
        var lastProgress = NIODeadline.now()
        var watchdog: Scheduled<Void>?
        var sawHead = false
        var keepAlive = true
        var status = 0
        var expectedLength: Int64?
        var received: Int64 = 0
    }

    private var context: ChannelHandlerContext?
    private var exchange: Exchange?
    private var lastID: UInt64 = 0
    /// The id `start` gives the first exchange (an HTTP/2 stream's handler runs only that one).
    static let firstID: UInt64 = 1

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func start(_ head: HTTPRequestHead, body: ByteBuffer?, exchange: Exchange) -> UInt64 {
        lastID &+= 1
        var exchange = exchange
        exchange.id = lastID
        guard let context, context.channel.isActive, self.exchange == nil else {
            exchange.completion(.failure(TransportFailure(underlying: ConnectionClosed(), afterHead: false)))
            return exchange.id
        }
        self.exchange = exchange
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        let id = exchange.id
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenFailure { [self] error in
            fail(id, TransportFailure(underlying: error, afterHead: false))
        }
        arm(after: exchange.deadlines.untilNextCheck(last: exchange.lastProgress, now: .now()))
        return id
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard exchange != nil else { return }  // what is left of a failed exchange's response
        switch unwrapInboundIn(data) {
        case .head(let head):
            // An interim response (100 Continue, 103 Early Hints): the final one follows.
            if (100..<200).contains(head.status.code), head.status.code != 101 { return }
            exchange!.sawHead = true
            exchange!.keepAlive = head.isKeepAlive
            let transportHead = TransportResponseHead(head)
            exchange!.status = transportHead.status
            exchange!.expectedLength = transportHead.expectedLength
            run { try $0.onHead(transportHead) }
        case .body(let buffer):
            exchange!.received += Int64(buffer.readableBytes)
            run { try $0.onChunk(buffer) }
        case .end:
            guard let finished = exchange else { return }
            exchange = nil
            finished.watchdog?.cancel()
            finished.completion(.success(Finished(received: finished.received, keepAlive: finished.keepAlive, status: finished.status,
                                                  expectedLength: finished.expectedLength)))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let exchange { fail(exchange.id, TransportFailure(underlying: ConnectionClosed(), afterHead: exchange.sawHead)) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A server that closes without TLS's close_notify: what was decoded before the close stands
        // (a body delimited by the close is complete; anything cut short fails when the channel goes).
        if let ssl = error as? NIOSSLError, case .uncleanShutdown = ssl {
            context.close(promise: nil)
            return
        }
        if let exchange { fail(exchange.id, TransportFailure(underlying: error, afterHead: exchange.sawHead)) }
        context.close(promise: nil)
    }

    func cancel(_ id: UInt64, with error: Error) {
        fail(id, error)
    }

    /// Runs a callback; a throw ends the exchange with that error and closes the connection (the
    /// rest of the response is not read). Progress is stamped after it.
    private func run(_ body: (Exchange) throws -> Void) {
        guard let current = exchange else { return }
        do {
            try body(current)
            exchange?.lastProgress = .now()
        } catch {
            fail(current.id, error)
        }
    }

    /// Ends exchange `id` with `error` and closes the connection, unless it already ended.
    private func fail(_ id: UInt64, _ error: Error) {
        guard let failed = exchange, failed.id == id else { return }
        exchange = nil
        failed.watchdog?.cancel()
        context?.close(promise: nil)
        failed.completion(.failure(error))
    }

    private func arm(after delay: Duration) {
        guard let context, let id = exchange?.id else { return }
        exchange?.watchdog = context.eventLoop.scheduleTask(in: .nanoseconds(delay.inNanoseconds)) { [self] in check(id) }
    }

    private func check(_ id: UInt64) {
        guard let current = exchange, current.id == id else { return }
        let now = NIODeadline.now()
        switch current.deadlines.check(now: now, lastProgress: current.lastProgress, hasHead: current.sawHead) {
        case .fail(let error):
            fail(id, error)
        case .checkAgain(let delay, let resetProgress):
            if resetProgress { exchange?.lastProgress = now }
            arm(after: delay)
        }
    }
}

extension TransportResponseHead {
    /// The head as SwiftNIO decoded it, for both transports: every field in order, `Content-Length`
    /// read once, the version as "1.0", "1.1" or "2".
    init(_ head: HTTPResponseHead) {
        var headers = HTTPHeaders()
        headers.reserveCapacity(head.headers.count)
        var expected: Int64?
        for header in head.headers {
            headers.add(name: header.name, value: header.value)
            if expected == nil, UTF8Text.equalsIgnoringASCIICase(header.name, "Content-Length") { expected = Int64(header.value) }
        }
        let version = head.version.major == 2 ? "2" : head.version.major == 1 && head.version.minor == 0 ? "1.0" : "1.1"
        self.init(status: Int(head.status.code), headers: headers, expectedLength: expected, httpVersion: version)
    }
}
