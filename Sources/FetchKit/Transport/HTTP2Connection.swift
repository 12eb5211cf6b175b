import NIOCore
import NIOHTTP1
import NIOHPACK
import NIOHTTP2
import NIOSSL

/// One HTTP/2 connection of `NIOTransport`, shared by every request to its host. Each exchange is
/// a stream, whose frames this handler writes and reads itself on the connection's pipeline, right
/// behind `NIOHTTP2Handler` (which keeps the protocol's state, HPACK and flow control): no child
/// channel, pipeline and handler per stream, which NIOHTTP2's multiplexer made for every request
/// (about a tenth of a job's instructions over HTTP/2, all on the connection's one loop). An
/// `ExchangeCore` per stream runs its exchange; a failed or cancelled one resets its stream, and
/// the connection and the other streams go on. Streams beyond the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` wait in `NIOHTTP2Handler` until one ends. The inbound windows
/// are kept open here as the multiplexer did: a stream's back to 1 MiB and the connection's to
/// 16 MiB whenever half is used (the body is consumed as it is read). Touched only on the
/// channel's event loop.
final class HTTP2Connection: ChannelInboundHandler, PooledConnection, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    let channel: Channel
    let key: ConnectionPool.Key
    /// Told once when the server sends GOAWAY, or the stream ids run out: the pool retires the
    /// connection (its open streams finish; the next request opens a new one, RFC 9113 §6.8).
    var onGoAway: () -> Void = {}
    private var context: ChannelHandlerContext?
    /// The open streams' exchanges. A stream leaves when its exchange ends, before the exchange's
    /// completion runs; one that is still here when it fails is reset.
    private var streams: [HTTP2StreamID: ExchangeCore] = [:]
    private var nextStreamID: HTTP2StreamID = 1
    private var goneAway = false
    private var flushQueued = false
    /// The deadline timer every stream's exchange shares.
    private let watchdog: SharedWatchdog

    /// The inbound windows this client keeps open (larger than HTTP/2's 64 KiB default, which
    /// would cap a large download at one window per round trip). The stream's is also the initial
    /// window announced in SETTINGS.
    static let streamWindow = 1 << 20
    static let connectionWindow = 16 << 20

    var isMultiplexed: Bool { true }

    init(channel: Channel, key: ConnectionPool.Key) {
        self.channel = channel
        self.key = key
        watchdog = SharedWatchdog(eventLoop: channel.eventLoop)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Opens a stream and runs the exchange on it; `completion` gets the body's byte count, or the
    /// error. Call it on the event loop. Returns an id for `cancel`. A connection that has gone
    /// away fails the exchange as refused: it was never sent, and goes again on a new connection.
    func execute(_ request: RequestMessage, deadlines: ExchangeDeadlines,
                 onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
                 onChunk: @escaping @Sendable (ByteBuffer) throws -> Void,
                 completion: @escaping @Sendable (Result<ExchangeFinished, Error>) -> Void) -> UInt64 {
        let exchange = ExchangeCore.Exchange(deadlines: deadlines, onHead: onHead, onChunk: onChunk, completion: completion)
        if !goneAway, nextStreamID > HTTP2StreamID(Int32.max - 2) {
            goneAway = true  // no stream id left: a new connection takes over
            onGoAway()
        }
        guard !goneAway, let context, case .http2(let head, let body) = request else {
            completion(.failure(TransportFailure(underlying: goneAway ? HTTP2StreamReset(code: .refusedStream) : ConnectionClosed(),
                                                 afterHead: false)))
            return 0
        }
        let streamID = nextStreamID
        nextStreamID = streamID.advanced(by: 2)
        let core = ExchangeCore(stream: streamID, on: self, context: context, watchdog: watchdog)
        guard core.begin(exchange) != nil else { return 0 }
        streams[streamID] = core
        // No write promise: what NIOHTTP2 refuses for this stream comes back through
        // `errorCaught` as a stream error, a GOAWAY through `channelRead`, a closed channel through
        // `channelInactive`.
        let (headers, data) = HTTP2Framing.request(head, body: body)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: headers)), promise: nil)
        if let data { context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: data)), promise: nil) }
        flushSoon()
        core.sent()
        return UInt64(Int32(streamID))
    }

    /// Flushes the requests written so far once the loop has run what is queued on it: the
    /// requests that jobs start in one turn of the loop (each job's task queued there when its
    /// connection is this one) go out in one TLS record and one `write`, not one each.
    private func flushSoon() {
        guard !flushQueued else { return }
        flushQueued = true
        channel.eventLoop.execute { [self] in
            flushQueued = false
            context?.flush()
        }
    }

    /// Ends exchange `id` with `error` if it is still running (its stream is reset). Call it on
    /// the event loop.
    func cancel(_ id: UInt64, with error: Error) {
        guard id > 0, id <= UInt64(Int32.max), let core = streams[HTTP2StreamID(Int32(id))] else { return }
        core.cancel(core.currentID, with: error)
    }

    func close() {
        channel.close(promise: nil)
    }

    /// `streamID`'s exchange ended (`ExchangeCore` calls this before its completion); a failed one
    /// still open is reset, so the server stops sending it.
    func streamEnded(_ streamID: HTTP2StreamID, reset: Bool) {
        guard streams.removeValue(forKey: streamID) != nil, reset, let context else { return }
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.streamID != .rootStream else {
            if case .goAway(let lastStreamID, _, _) = frame.payload { wentAway(lastStreamID: lastStreamID) }
            return
        }
        guard let core = streams[frame.streamID] else { return }  // what is left of an ended stream
        // A stream the server reset is closed: it needs no reset of ours.
        if case .rstStream = frame.payload { streams[frame.streamID] = nil }
        core.read { sawHead in try HTTP2Framing.response(frame.payload, sawHead: sawHead) }
    }

    /// NIOHTTP2 sends a few events a stream (created, window updated, closed): chosen by the event's
    /// type before any cast, since each `as?` that fails is a whole dynamic cast in the runtime
    /// (trying the two casts in turn made 7 casts a request, 2,200 instructions; this, about 1,000 fewer).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        let type = Swift.type(of: event)
        if type == NIOHTTP2WindowUpdatedEvent.self, let update = event as? NIOHTTP2WindowUpdatedEvent {
            windowUpdated(update, context: context)
        } else if type == StreamClosedEvent.self, let closed = event as? StreamClosedEvent {
            // After the stream's last frame: an exchange still running here was cut off.
            streams.removeValue(forKey: closed.streamID)?.failCurrent(HTTP2StreamReset(code: closed.reason ?? .cancel))
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // One stream's error (NIOHTTP2 has reset the stream): that exchange fails, the rest go on.
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            streams.removeValue(forKey: streamError.streamID)?.failCurrent(streamError.baseError)
            return
        }
        // A server that closes without TLS's close_notify: what was read before stands, and
        // what was cut short fails as the channel closes.
        if let ssl = error as? NIOSSLError, case .uncleanShutdown = ssl {
            context.close(promise: nil)
            return
        }
        // The connection's own error (a protocol error, a TLS failure): every stream fails with
        // it, and the pool opens a new connection for what comes next.
        failAll(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(ConnectionClosed())
        context.fireChannelInactive()
    }

    private func failAll(_ error: Error) {
        let open = streams.values
        streams.removeAll()
        for core in open { core.failCurrent(error) }
    }

    /// GOAWAY: no new stream on this connection. The streams after `lastStreamID` were not
    /// processed and are failed as refused (safe to send again, RFC 9113 §8.7); the others finish.
    private func wentAway(lastStreamID: HTTP2StreamID) {
        if !goneAway {
            goneAway = true
            onGoAway()
        }
        let refused = streams.filter { $0.key > lastStreamID }
        for (streamID, core) in refused {
            streams[streamID] = nil
            core.failCurrent(HTTP2StreamReset(code: .refusedStream))
        }
    }

    /// NIOHTTP2 tells the inbound window after each DATA frame: below half, it is opened again.
    private func windowUpdated(_ update: NIOHTTP2WindowUpdatedEvent, context: ChannelHandlerContext) {
        guard let size = update.inboundWindowSize else { return }
        let target: Int
        if update.streamID == .rootStream {
            target = Self.connectionWindow
        } else {
            guard streams[update.streamID] != nil else { return }  // ended: it takes no more data
            target = Self.streamWindow
        }
        guard size <= target / 2 else { return }
        let increment = HTTP2Frame.FramePayload.windowUpdate(windowSizeIncrement: target - size)
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: update.streamID, payload: increment)), promise: nil)
    }

    /// The server did not process the stream: it was opened on a connection already going away
    /// (after a GOAWAY), or refused (REFUSED_STREAM, or beyond the GOAWAY's last stream id).
    static func wasRefused(_ error: Error) -> Bool {
        if error is NIOHTTP2Errors.CreatedStreamAfterGoaway || error is NIOHTTP2Errors.IOOnClosedConnection { return true }
        if let closed = error as? NIOHTTP2Errors.StreamClosed { return closed.errorCode == .refusedStream }
        if let reset = error as? HTTP2StreamReset { return reset.code == .refusedStream }
        if let reset = error as? NIOHTTP2Errors.StreamError { return wasRefused(reset.baseError) }
        return false
    }
}

/// HTTP/2 frames for `HTTP2Connection`, written and read straight: the request head becomes one
/// HEADERS frame (`:method`, `:scheme`, `:authority` from `Host`, `:path`, then the fields with
/// their names in lower case and HTTP/1.1's connection-specific ones left out, RFC 9113 §8.2.2),
/// and the response's HPACK fields become the response head without an HTTP/1 head in between.
/// `:path` is sent as a literal HPACK does not index: a batch's paths all differ, and each one went
/// into the dynamic table, pushed out the fields that do repeat, and made every lookup walk a table
/// full of paths (nghttp2, under curl, does not index it either).
enum HTTP2Framing {
    /// The HEADERS frame, and the DATA frame when there is a body (which then ends the stream).
    static func request(_ head: HTTPRequestHead, body: ByteBuffer?) -> (headers: HTTP2Frame.FramePayload, data: HTTP2Frame.FramePayload?) {
        var fields = HPACKHeaders()
        fields.reserveCapacity(head.headers.count + 3)
        fields.add(name: ":method", value: head.method.rawValue)
        fields.add(name: ":scheme", value: "https")
        fields.add(name: ":authority", value: head.headers.first(name: "host") ?? "")
        fields.add(name: ":path", value: head.uri, indexing: .nonIndexable)
        for (name, value) in head.headers {
            let lower = lowercased(name)
            if connectionSpecific.contains(lower) { continue }
            if lower == "te", value.lowercased() != "trailers" { continue }
            fields.add(name: lower, value: value)
        }
        let headers = HTTP2Frame.FramePayload.headers(.init(headers: fields, endStream: body == nil))
        return (headers, body.map { .data(.init(data: .byteBuffer($0), endStream: true)) })
    }

    static func response(_ payload: HTTP2Frame.FramePayload, sawHead: Bool) throws -> ResponseParts {
        switch payload {
        case .headers(let frame):
            // After the final head: trailers, which end the response.
            guard !sawHead else { return ResponseParts(end: frame.endStream) }
            guard let statusField = frame.headers.first(name: ":status"), let status = Int(statusField) else {
                throw HTTP2MalformedResponse(reason: "a response head without :status")
            }
            // An interim response (100 Continue, 103 Early Hints): the final one follows.
            if (100..<200).contains(status) { return ResponseParts() }
            var headers = HTTPHeaders()
            headers.reserveCapacity(frame.headers.count)
            var expected: Int64?
            for (name, value, _) in frame.headers where !name.hasPrefix(":") {
                headers.add(name: name, value: value)
                if expected == nil, name == "content-length" { expected = Int64(value) }
            }
            let head = TransportResponseHead(status: status, headers: headers, expectedLength: expected, httpVersion: "2")
            return ResponseParts(head: head, end: frame.endStream)
        case .data(let frame):
            guard case .byteBuffer(let buffer) = frame.data else { return ResponseParts(end: frame.endStream) }
            return ResponseParts(body: buffer.readableBytes > 0 ? buffer : nil, end: frame.endStream)
        case .rstStream(let code):
            throw HTTP2StreamReset(code: code)
        default:
            return ResponseParts()
        }
    }

    /// Fields HTTP/2 forbids (RFC 9113 §8.2.2); `host` goes into `:authority`.
    private static let connectionSpecific: Set<String> = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"]

    /// `name` in lower case, without a new string when it already is (field names are ASCII).
    private static func lowercased(_ name: String) -> String {
        name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) ? name.lowercased() : name
    }
}

/// The server reset the stream (RST_STREAM) before the response ended.
struct HTTP2StreamReset: Error, CustomStringConvertible {
    var code: HTTP2ErrorCode
    var description: String { "the server reset the stream (\(code))" }
}

/// A response HTTP/2 does not allow.
struct HTTP2MalformedResponse: Error, CustomStringConvertible {
    var reason: String
    var description: String { "the server's HTTP/2 response is malformed: \(reason)" }
}
