import NIOCore
import NIOHTTP1
import NIOHTTP2
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

/// Runs one exchange after another on a channel: an HTTP/1.1 connection, whose request is written
/// and whose response is read as bytes (`HTTP1ExchangeHandler`), or one HTTP/2 stream, whose frames its
/// connection reads and writes straight (`HTTP2Connection`, a core per stream). The request is
/// written at once; the head and every body chunk go to the session's callbacks as they are read;
/// the read, total and outage deadlines are checked by a timer on the same loop. The framing is
/// the caller's (`read` takes a parser): concrete handlers around one core rather than one handler
/// generic over its framing, whose methods (called by NIO through its protocols) would run
/// unspecialized, with a metadata lookup per call (9k instructions a job).
/// Unchecked: every member is touched only on the channel's event loop.
final class ExchangeCore: @unchecked Sendable {
    /// A class: the core looks at the exchange on every read, and a struct of four closures was
    /// copied out each time (a retain and a release of each).
    final class Exchange {
        let deadlines: ExchangeDeadlines
        let onHead: @Sendable (TransportResponseHead) throws -> Void
        let onChunk: @Sendable (ByteBuffer) throws -> Void
        let completion: @Sendable (Result<ExchangeFinished, Error>) -> Void
        var id: UInt64 = 0
        var lastProgress = NIODeadline.now()
        var sawHead = false
        var keepAlive = true
        var status = 0
        var expectedLength: Int64?
        var received: Int64 = 0

        init(deadlines: ExchangeDeadlines, onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
             onChunk: @escaping @Sendable (ByteBuffer) throws -> Void, completion: @escaping @Sendable (Result<ExchangeFinished, Error>) -> Void) {
            self.deadlines = deadlines
            self.onHead = onHead
            self.onChunk = onChunk
            self.completion = completion
        }
    }

    private(set) var context: ChannelHandlerContext?
    private var exchange: Exchange?
    /// The timer that checks the current exchange's deadlines, and when it fires. One per channel,
    /// not per exchange: an exchange that ends leaves it armed, and the next one on a keep-alive
    /// connection re-arms it only if it needs a check sooner. A timer that finds nothing due (or no
    /// exchange) is harmless; scheduling and cancelling one for every exchange cost two futures, a
    /// closure and two trips through the loop's timer heap a job.
    private var watchdog: Scheduled<Void>?
    private var watchdogDue: NIODeadline?
    /// For an HTTP/2 stream's core: the connection's timer, the stream and the connection. Its one
    /// exchange's end hands the stream back to the connection, and a failure resets the stream
    /// instead of closing the channel. The connection is let go at the end.
    private var sharedWatchdog: SharedWatchdog?
    private var stream: HTTP2StreamID?
    private var connection: HTTP2Connection?
    private var lastID: UInt64 = 0

    /// A core for a connection's exchanges, one after another (HTTP/1.1).
    init() {}

    /// A core for the one exchange of HTTP/2 stream `stream` on `connection`.
    init(stream: HTTP2StreamID, on connection: HTTP2Connection, context: ChannelHandlerContext, watchdog: SharedWatchdog) {
        self.stream = stream
        self.connection = connection
        self.context = context
        sharedWatchdog = watchdog
    }

    func added(_ context: ChannelHandlerContext) { self.context = context }
    func removed() {
        context = nil
        disarm()
    }

    /// Takes `exchange` on, with the next id: the context to write its request to, or nil when the
    /// channel can't take it (the completion has been told).
    func begin(_ exchange: Exchange) -> (id: UInt64, context: ChannelHandlerContext)? {
        lastID &+= 1
        exchange.id = lastID
        guard let context, context.channel.isActive, self.exchange == nil else {
            exchange.completion(.failure(TransportFailure(underlying: ConnectionClosed(), afterHead: false)))
            return nil
        }
        self.exchange = exchange
        return (exchange.id, context)
    }

    /// The id the last `begin` gave.
    var currentID: UInt64 { lastID }

    /// An exchange is under way (its response is still to come, or coming).
    var isExchanging: Bool { exchange != nil }

    /// The current exchange's request is written without a promise: a write that fails closes
    /// the channel (NIO fails the exchange through `inactive`), and what NIO refuses comes back as
    /// an error (`caught` on HTTP/1.1; over HTTP/2 the connection fails the stream's core). Its
    /// deadlines start.
    func sent() {
        guard let current = exchange else { return }
        arm(after: current.deadlines.untilNextCheck(last: current.lastProgress, now: .now()))
    }

    /// One part read from the channel, as `parse` makes it out (given whether the final head came).
    func read(_ parse: (Bool) throws -> ResponseParts) {
        guard let current = exchange else { return }  // what is left of a failed exchange's response
        let parts: ResponseParts
        do {
            parts = try parse(current.sawHead)
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
        // Bytes after the response's end leave the connection out of step: not used again.
        if !parts.keepAlive { exchange?.keepAlive = false }
        if let buffer = parts.body, exchange != nil {
            exchange!.received += Int64(buffer.readableBytes)
            run { try $0.onChunk(buffer) }
        }
        if parts.end, let finished = exchange {
            exchange = nil
            streamEnded(reset: false)
            finished.completion(.success(ExchangeFinished(received: finished.received, keepAlive: finished.keepAlive,
                                                          status: finished.status, expectedLength: finished.expectedLength)))
        }
    }

    func inactive() {
        failCurrent(ConnectionClosed())
    }

    /// The channel or the stream failed under the current exchange, if any.
    func failCurrent(_ error: Error) {
        if let exchange { fail(exchange.id, TransportFailure(underlying: error, afterHead: exchange.sawHead)) }
    }

    func caught(_ error: Error, context: ChannelHandlerContext) {
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

    /// Ends exchange `id` with `error` and closes the channel (resets the stream), unless it
    /// already ended.
    private func fail(_ id: UInt64, _ error: Error) {
        guard let failed = exchange, failed.id == id else { return }
        exchange = nil
        if stream != nil { streamEnded(reset: true) } else { context?.close(promise: nil) }
        failed.completion(.failure(error))
    }

    /// An HTTP/2 stream's exchange ended: the connection takes the stream back (resetting it if
    /// asked and still open), and the shared timer lets this core go.
    private func streamEnded(reset: Bool) {
        guard let connection, let stream else { return }
        self.connection = nil
        connection.streamEnded(stream, reset: reset)
        sharedWatchdog?.remove(self)
    }

    /// Makes sure the timer fires within `delay`: an armed timer due by then stays as it is.
    private func arm(after delay: Duration) {
        guard let context, exchange != nil else { return }
        let due = NIODeadline.now() + .nanoseconds(delay.inNanoseconds)
        if let sharedWatchdog {
            sharedWatchdog.arm(self, by: due)
            return
        }
        if let watchdogDue, watchdog != nil, watchdogDue <= due { return }
        watchdog?.cancel()
        watchdogDue = due
        watchdog = context.eventLoop.scheduleTask(deadline: due) { [self] in
            watchdog = nil
            watchdogDue = nil
            check()
        }
    }

    private func disarm() {
        watchdog?.cancel()
        watchdog = nil
        watchdogDue = nil
    }

    /// The connection's timer (`sharedWatchdog`) fired for this core.
    func watchdogFired() { check() }

    /// The timer fired: checks the current exchange, if any, and arms again for its next check.
    private func check() {
        guard let current = exchange else { return }
        let id = current.id
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
    /// The head as SwiftNIO decoded it (AsyncHTTPClient's responses): every field in order, `Content-Length`
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
