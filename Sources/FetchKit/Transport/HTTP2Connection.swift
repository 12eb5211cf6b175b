import NIOCore
import NIOHTTP1
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 connection of `NIOTransport`, shared by every request to its host: each exchange is a
/// stream of its own, opened with NIOHTTP2's multiplexer and run by an `HTTP2ExchangeHandler`, which
/// writes and reads the stream's frames itself (`HTTP2Framing`). Streams
/// beyond the server's `SETTINGS_MAX_CONCURRENT_STREAMS` wait in NIOHTTP2 until one ends. A failed
/// or cancelled exchange resets its stream; the connection and the other streams go on.
final class HTTP2Connection: PooledConnection, @unchecked Sendable {
    let channel: Channel
    let key: ConnectionPool.Key
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    /// The exchanges in progress, by id, and those cancelled before their stream opened. Touched
    /// only on the channel's event loop.
    private var exchanges: [UInt64: HTTP2ExchangeHandler] = [:]
    private var cancelled: [UInt64: Error] = [:]
    private var lastID: UInt64 = 0
    /// The deadline timer every stream's exchange shares.
    private let watchdog: SharedWatchdog

    var isMultiplexed: Bool { true }

    init(channel: Channel, key: ConnectionPool.Key, multiplexer: NIOHTTP2Handler.StreamMultiplexer) {
        self.channel = channel
        self.key = key
        self.multiplexer = multiplexer
        watchdog = SharedWatchdog(eventLoop: channel.eventLoop)
    }

    /// Opens a stream and runs the exchange on it; `completion` gets the body's byte count, or the
    /// error. Call it on the event loop. Returns an id for `cancel`.
    func execute(_ head: HTTPRequestHead, body: ByteBuffer?, deadlines: ExchangeDeadlines,
                 onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
                 onChunk: @escaping @Sendable (ByteBuffer) throws -> Void,
                 completion: @escaping @Sendable (Result<ExchangeFinished, Error>) -> Void) -> UInt64 {
        lastID &+= 1
        let id = lastID
        let handler = HTTP2ExchangeHandler()
        handler.core.sharedWatchdog = watchdog
        exchanges[id] = handler
        let opened = channel.eventLoop.makePromise(of: Channel.self)
        multiplexer.createStreamChannel(promise: opened) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(handler)
            }
        }
        let ended: @Sendable (Result<ExchangeFinished, Error>) -> Void = { [self] result in
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
                _ = handler.start(head, body: body, exchange: ExchangeCore.Exchange(deadlines: deadlines, onHead: onHead, onChunk: onChunk,
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
        handler.cancel(ExchangeCore.firstID, with: error)
    }

    func close() {
        channel.close(promise: nil)
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

/// HTTP/2 frames for `HTTP2ExchangeHandler`, written and read straight: the request head becomes one
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
