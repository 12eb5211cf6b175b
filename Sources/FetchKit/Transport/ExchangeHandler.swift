import NIOCore
import NIOHTTP1
import NIOSSL

/// How an exchange ended: the body's byte count, and what the response said of the connection.
struct ExchangeFinished {
    var received: Int64
    /// The response allows another request on the connection.
    var keepAlive: Bool
    var status: Int
    var expectedLength: Int64?
}

/// What one part read from the channel carries: the final response head (interim 1xx heads are
/// left out), a piece of the body, the end of the response, or several of these at once.
struct ResponseParts {
    var head: TransportResponseHead?
    /// The response allows another request on the connection (with `head`).
    var keepAlive = true
    var body: ByteBuffer?
    var end = false
}

/// The protocol's side of `ExchangeHandler`: the parts a request is written as, and what a part
/// read means.
protocol ExchangeFraming: SendableMetatype {
    associatedtype Inbound
    associatedtype Outbound
    /// The request as the channel takes it, the last part ending it.
    static func request(_ head: HTTPRequestHead, body: ByteBuffer?) -> [Outbound]
    /// What `part` carries, given whether the final head was read already; throws for a response
    /// the protocol does not allow.
    static func response(_ part: Inbound, sawHead: Bool) throws -> ResponseParts
}

/// HTTP/1.1, behind NIO's HTTP/1 encoder and decoder.
enum HTTP1Framing: ExchangeFraming {
    static func request(_ head: HTTPRequestHead, body: ByteBuffer?) -> [HTTPClientRequestPart] {
        if let body { return [.head(head), .body(.byteBuffer(body)), .end(nil)] }
        return [.head(head), .end(nil)]
    }

    static func response(_ part: HTTPClientResponsePart, sawHead: Bool) -> ResponseParts {
        switch part {
        case .head(let head):
            // An interim response (100 Continue, 103 Early Hints): the final one follows.
            if (100..<200).contains(head.status.code), head.status.code != 101 { return ResponseParts() }
            return ResponseParts(head: TransportResponseHead(head), keepAlive: head.isKeepAlive)
        case .body(let buffer):
            return ResponseParts(body: buffer)
        case .end:
            return ResponseParts(end: true)
        }
    }
}

/// Runs one exchange after another on a channel: an HTTP/1.1 connection, whose parts NIO's HTTP/1
/// encoder and decoder make (`HTTP1Framing`), or one HTTP/2 stream, whose frames it reads and
/// writes itself (`HTTP2Framing`). The request is written at once; the head and every body chunk go
/// to the session's callbacks as they are read; the read, total and outage deadlines are checked by
/// a timer on the same loop. Unchecked: every member is touched only on the channel's event loop.
final class ExchangeHandler<Framing: ExchangeFraming>: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = Framing.Inbound
    typealias OutboundOut = Framing.Outbound
    typealias Finished = ExchangeFinished

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
    static var firstID: UInt64 { 1 }

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
        let parts = Framing.request(head, body: body)
        for part in parts.dropLast() { context.write(wrapOutboundOut(part), promise: nil) }
        let id = exchange.id
        context.writeAndFlush(wrapOutboundOut(parts[parts.count - 1])).whenFailure { [self] error in
            fail(id, TransportFailure(underlying: error, afterHead: false))
        }
        arm(after: exchange.deadlines.untilNextCheck(last: exchange.lastProgress, now: .now()))
        return id
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let current = exchange else { return }  // what is left of a failed exchange's response
        let parts: ResponseParts
        do {
            parts = try Framing.response(unwrapInboundIn(data), sawHead: current.sawHead)
        } catch {
            fail(current.id, TransportFailure(underlying: error, afterHead: current.sawHead))
            return
        }
        if let head = parts.head {
            exchange!.sawHead = true
            exchange!.keepAlive = parts.keepAlive
            exchange!.status = head.status
            exchange!.expectedLength = head.expectedLength
            run { try $0.onHead(head) }
        }
        if let buffer = parts.body, exchange != nil {
            exchange!.received += Int64(buffer.readableBytes)
            run { try $0.onChunk(buffer) }
        }
        if parts.end, let finished = exchange {
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

    /// Runs a callback; a throw ends the exchange with that error and closes the channel (the
    /// rest of the response is not read; an HTTP/2 stream is reset). Progress is stamped after it.
    private func run(_ body: (Exchange) throws -> Void) {
        guard let current = exchange else { return }
        do {
            try body(current)
            exchange?.lastProgress = .now()
        } catch {
            fail(current.id, error)
        }
    }

    /// Ends exchange `id` with `error` and closes the channel, unless it already ended.
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
