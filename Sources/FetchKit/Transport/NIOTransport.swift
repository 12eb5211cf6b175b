import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// FetchKit's own HTTP client, written on SwiftNIO's channels, NIOHTTP2 and NIOSSL, with HTTP/1.1
/// encoded and parsed by FetchKit itself (`HTTP1RequestEncoding`, `HTTP1ResponseParser`), for the
/// requests that need nothing more than a direct connection: no proxy, no body or a body in memory.
/// Plain `http://` (without `tls` settings, which AsyncHTTPClient checks and refuses there) speaks
/// HTTP/1.1; `https://` negotiates HTTP/2 or HTTP/1.1 by ALPN (HTTP/1.1 only with `http_version:
/// 1.1`), with every `tls` setting: trust, pins, client certificates. Everything else — proxies,
/// bodies streamed from files — goes to the AsyncHTTPClient transport it holds.
///
/// Why a second client: a batch of small files is bounded by the per-request cost, and for a plain
/// keep-alive request most of AsyncHTTPClient's (its request state machines, generic over the
/// delegate and so instantiated at run time, its pool manager, the hops between them) buys nothing.
/// Here a request is a lease from `ConnectionPool`, one write (or one HTTP/2 stream), and the
/// decoded head and chunks handed to the session's callbacks on the connection's event loop; the
/// task waiting for it is resumed once, when the response ends. Both transports run every Session
/// behaviour test.
public final class NIOTransport: HTTPTransport {
    private let pool: ConnectionPool
    private let proxies: ProxyResolver
    /// Sends what this client doesn't; made on first use, so a batch of plain requests never
    /// starts an AsyncHTTPClient (whose deinit traps unless it was shut down).
    private let fallbackClient = LockedBox<(transport: AsyncHTTPClientTransport?, isShutDown: Bool)>((nil, false))
    private let makeFallback: @Sendable () -> AsyncHTTPClientTransport

    /// The same parameters as `AsyncHTTPClientTransport`'s, which serves the requests this client
    /// leaves to it.
    public init(perHost: Int = 4, connectTimeout: Duration = TransportTimeouts.defaults.connect,
                httpVersion: AsyncHTTPClientTransport.HTTPVersion = .auto, proxies: ProxyResolver = .direct) {
        pool = ConnectionPool(perHost: perHost, connectTimeout: connectTimeout, offersHTTP2: httpVersion == .auto)
        self.proxies = proxies
        makeFallback = { AsyncHTTPClientTransport(perHost: perHost, connectTimeout: connectTimeout, httpVersion: httpVersion, proxies: proxies) }
    }

    public func shutdown() async throws {
        await pool.shutdown()
        let fallback = fallbackClient.withLock { state in
            state.isShutDown = true
            return state.transport
        }
        try await fallback?.shutdown()
    }

    /// A connection to the request's host on another event loop than the caller's, for the
    /// requests this client sends itself (a proxy's, or AsyncHTTPClient's, are not opened early).
    /// The pool counts it at once (a request asking next waits for it); the TLS context and the
    /// channel are made on that loop, so the caller (`fetchctl run` loading its jobs file, or
    /// setting up its run) goes on at once.
    public func preconnect(for request: BuiltRequest, options: TransportOptions) {
        guard var target = Self.target(of: request), proxies.proxy(for: request.url) == nil,
              target.isSecure || options.tls == Self.noTLS else { return }
        var prepare: (@Sendable () -> Void)?
        if target.isSecure {
            target.key.tls = options.tls
            let url = Redactor.redactURLUserinfo(request.url.absoluteString)
            // Unusable TLS settings leave no context: the connection then fails quietly, and the
            // request that waited for it opens its own, which reports why.
            prepare = { [pool] in _ = try? pool.tlsContexts.security(for: options.tls, url: url) }
        }
        pool.preconnect(target.key, on: MultiThreadedEventLoopGroup.singleton.loopOtherThanCurrent(), preparing: prepare)
    }

    /// Whether a request has gone to AsyncHTTPClient (tests check which client served them).
    var hasUsedFallback: Bool { fallbackClient.withLock { $0.transport != nil } }

    /// The AsyncHTTPClient transport, made now if this is its first request.
    private func fallback(url: URL) throws -> AsyncHTTPClientTransport {
        try fallbackClient.withLock { state in
            if let made = state.transport { return made }
            guard !state.isShutDown else {
                throw FetchError(.cancelled, "the transport was shut down", url: Redactor.redactURLUserinfo(url.absoluteString))
            }
            let made = makeFallback()
            state.transport = made
            return made
        }
    }

    public func send(
        _ request: BuiltRequest,
        options: TransportOptions,
        onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
        onChunk: @escaping @Sendable (ByteBuffer) throws -> Void
    ) async throws {
        guard var target = Self.target(of: request), proxies.proxy(for: request.url) == nil,
              target.isSecure || options.tls == Self.noTLS else {
            // Plain http:// with `tls` settings goes to AsyncHTTPClient too, which checks them there
            // (pins refused, an unreadable `ca_file` reported) exactly as over https://.
            try await fallback(url: request.url).send(request, options: options, onHead: onHead, onChunk: onChunk)
            return
        }
        let url = Redactor.redactURLUserinfo(request.url.absoluteString)
        if target.isSecure {
            // The context for these settings, made now if new: a file that can't be used fails here.
            _ = try pool.tlsContexts.security(for: options.tls, url: url)
            target.key.tls = options.tls
        }
        // HTTP/1.1's bytes, made before a connection is taken when the scheme says the protocol
        // (a request HTTP/1.1 can't carry then fails with no connection touched); over https the
        // connection's protocol decides which form is made.
        var http1 = target.isSecure ? nil : try HTTP1RequestEncoding.encode(request, target: target, url: url)
        var http2: RequestMessage?
        let eventLoop = MultiThreadedEventLoopGroup.singleton.any()
        // A kept-alive connection the server closed a moment ago fails before any response: the
        // request goes again on a new connection, once, when it is idempotent (as curl and
        // browsers do). So does any request whose HTTP/2 stream the server refused unprocessed (a
        // GOAWAY that came first, REFUSED_STREAM): RFC 9113 §8.7 says it is safe to send again.
        var retriedClosed = false
        while true {
            let lease: ConnectionPool.Lease
            do {
                switch pool.lease(target.key, on: eventLoop) {
                case .ready(let ready): lease = ready
                case .pending(let future): lease = try await future.get()
                }
            } catch {
                throw await Self.explained(error, target: target, tls: options.tls, url: url)
            }
            let message: RequestMessage
            if lease.connection.isMultiplexed {
                message = http2 ?? .http2(head: Self.requestHead(request, target: target), body: Self.body(request))
                http2 = message
            } else {
                do {
                    let bytes = try http1 ?? HTTP1RequestEncoding.encode(request, target: target, url: url)
                    http1 = bytes
                    message = .http1(bytes: bytes, isHead: request.method == .head)
                } catch {
                    pool.release(lease.connection)  // never used: as good as it was
                    throw error
                }
            }
            do {
                let finished = try await exchange(message, on: lease.connection, home: eventLoop,
                                                  deadlines: ExchangeDeadlines(timeouts: options.timeouts, url: url, networkWaiter: options.networkWaiter),
                                                  onHead: onHead, onChunk: onChunk)
                if let expected = finished.expectedLength, finished.received < expected, request.method != .head, finished.status != 304 {
                    throw FetchError(.truncated, "the body ended after \(finished.received) of \(expected) bytes", url: url, status: finished.status)
                }
                return
            } catch let failure as TransportFailure {
                let closedUnderIt = lease.reused && request.method.isIdempotent
                    && (failure.underlying is ConnectionClosed || AsyncHTTPClientTransport.isClosedConnection(failure.underlying))
                if !failure.afterHead, closedUnderIt || HTTP2Connection.wasRefused(failure.underlying), !retriedClosed, !Task.isCancelled {
                    retriedClosed = true
                    continue
                }
                if Task.isCancelled { throw FetchError(.cancelled, "cancelled", url: url) }
                throw await Self.explained(failure, target: target, tls: options.tls, url: url)
            }
        }
    }

    private static let noTLS = TLSOptions()

    /// One exchange on `connection`; gives the connection back to the pool when the response allows.
    /// The waiting task is resumed on `home`, the loop it ran on, when the connection is an HTTP/2
    /// one on another loop: a host's streams all share one connection, so one loop, and without
    /// this every job's own work after its response (the file's rename, the records) would pile up
    /// on that loop while the other stayed idle. A small response's callbacks run at home too
    /// (`HomeRelay`).
    private func exchange(_ message: RequestMessage, on connection: any PooledConnection, home: EventLoop, deadlines: ExchangeDeadlines,
                          onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
                          onChunk: @escaping @Sendable (ByteBuffer) throws -> Void) async throws -> ExchangeFinished {
        // The exchange's id once started, and whether the task was cancelled: a cancellation that
        // comes before the start (on the loop) must stop it from starting.
        let control = LockedBox<(id: UInt64?, cancelled: Bool)>((nil, false))
        let pool = self.pool
        let cancelled = FetchError(.cancelled, "cancelled", url: deadlines.url)
        // Ends the exchange with `error` once it has started (on the connection's loop).
        let cancelExchange: @Sendable (Error) -> Void = { error in
            connection.eventLoop.execute {
                if let id = control.withLock({ $0.id }) { connection.cancel(id, with: error) }
            }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ExchangeFinished, Error>) in
                let start: @Sendable () -> Void = {
                    guard !control.withLock({ $0.cancelled }) else {
                        pool.release(connection)  // never used: as good as it was
                        continuation.resume(throwing: cancelled)
                        return
                    }
                    let resumesAtHome = connection.isMultiplexed && home !== connection.eventLoop
                    if resumesAtHome {
                        // A small response's file is written at home too (`HomeRelay`).
                        let relay = HomeRelay(home: home, cancel: cancelExchange)
                        let id = connection.execute(message, deadlines: deadlines, onHead: relay.head(onHead), onChunk: relay.chunk(onChunk)) { result in
                            relay.finish(result) { continuation.resume(with: $0) }
                        }
                        control.withLock { $0.id = id }
                        return
                    }
                    let id = connection.execute(message, deadlines: deadlines, onHead: onHead, onChunk: onChunk) { result in
                        // An HTTP/2 stream ends with its exchange; the connection stays shared.
                        if case .success(let finished) = result, !connection.isMultiplexed {
                            if finished.keepAlive { pool.release(connection) } else { connection.close() }
                        }
                        continuation.resume(with: result)
                    }
                    control.withLock { $0.id = id }
                }
                if connection.eventLoop.inEventLoop { start() } else { connection.eventLoop.execute(start) }
            }
        } onCancel: {
            control.withLock { $0.cancelled = true }
            cancelExchange(cancelled)
        }
    }

    // MARK: - Requests

    struct Target {
        var key: ConnectionPool.Key
        /// `https://`: the connection speaks TLS (its settings go into `key` once resolved).
        var isSecure: Bool
        /// The `Host` field: the host, with the port unless it is 80.
        var hostField: String
        /// The request target: path and query, percent-encoded as in the URL.
        var path: String
    }

    /// Where a request goes, when this client can send it: `http://` or `https://` with a host and
    /// no userinfo, no body or one in memory. Read from the URL's text in one pass: Foundation's
    /// `path` and `query` accessors re-parse the URL each, and cost more than the rest of the head.
    static func target(of request: BuiltRequest) -> Target? {
        switch request.body {
        case .none, .data: break
        case .file, .multipart: return nil
        }
        let text = request.url.absoluteString
        let bytes = Array(text.utf8)
        // "http", then "s" or not (letters in either case), then "://".
        guard bytes.count > 7 else { return nil }
        for (index, letter) in "http".utf8.enumerated() where bytes[index] | 0x20 != letter { return nil }
        let isSecure = bytes[4] | 0x20 == UInt8(ascii: "s")
        let separator = isSecure ? 5 : 4
        guard bytes[separator] == UInt8(ascii: ":"), bytes[separator + 1] == UInt8(ascii: "/"), bytes[separator + 2] == UInt8(ascii: "/") else { return nil }
        let schemeLength = separator + 3
        let defaultPort = isSecure ? 443 : 80
        var end = schemeLength
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "#") { end += 1 }
        let authority = bytes[schemeLength..<end]
        // Userinfo (credentials in the URL) goes the long way, as do hosts this scan can't read.
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }
        var hostBytes = authority
        var portBytes = authority[authority.endIndex...]
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = authority[(authority.startIndex + 1)..<close]
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return nil }
                portBytes = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[..<colon]
            portBytes = authority[(colon + 1)...]
        }
        var port = defaultPort
        if !portBytes.isEmpty {
            guard portBytes.count <= 5, let parsed = Int(String(decoding: portBytes, as: UTF8.self)), parsed > 0, parsed < 65_536 else { return nil }
            port = parsed
        }
        guard !hostBytes.isEmpty else { return nil }
        let host = String(decoding: hostBytes, as: UTF8.self)
        let bracketed = authority.first == UInt8(ascii: "[") ? "[\(host)]" : host
        var pathEnd = end
        while pathEnd < bytes.count, bytes[pathEnd] != UInt8(ascii: "#") { pathEnd += 1 }
        var path = String(decoding: bytes[end..<pathEnd], as: UTF8.self)
        if path.isEmpty || path.first == "?" { path = "/" + path }
        return Target(key: ConnectionPool.Key(host: host, port: port), isSecure: isSecure,
                      hostField: port == defaultPort ? bracketed : "\(bracketed):\(port)", path: path)
    }

    /// The request head for an HTTP/2 stream: the request's own fields, with `Host` and the body's
    /// `Content-Length` added where it has none (HTTP/1.1's bytes: `HTTP1RequestEncoding`).
    static func requestHead(_ request: BuiltRequest, target: Target) -> HTTPRequestHead {
        var headers = NIOHTTP1.HTTPHeaders()
        headers.reserveCapacity(request.headers.count + 2)
        var hasHost = false, hasLength = false
        for header in request.headers {
            if !hasHost, UTF8Text.equalsIgnoringASCIICase(header.name, "Host") { hasHost = true }
            if !hasLength, UTF8Text.equalsIgnoringASCIICase(header.name, "Content-Length") { hasLength = true }
            headers.add(name: header.name, value: header.value)
        }
        if !hasHost { headers.add(name: "Host", value: target.hostField) }
        if !hasLength {
            switch request.body {
            case .data(let data): headers.add(name: "Content-Length", value: String(data.count))
            case .none where [.post, .put, .patch].contains(request.method): headers.add(name: "Content-Length", value: "0")
            default: break
            }
        }
        return HTTPRequestHead(version: .http1_1, method: NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue), uri: target.path, headers: headers)
    }

    static func body(_ request: BuiltRequest) -> ByteBuffer? {
        guard case .data(let data) = request.body, !data.isEmpty else { return nil }
        return ByteBuffer(bytes: data)
    }

    // MARK: - Errors

    /// `error` classified; a certificate the handshake refused is looked at again to say which one
    /// and why (expired, another host's, an unknown issuer), as AsyncHTTPClient's transport does.
    static func explained(_ error: Error, target: Target, tls: TLSOptions, url: String) async -> Error {
        let classified = classify(error, url: url, afterHead: false)
        let underlying = (error as? TransportFailure)?.underlying ?? error
        guard target.isSecure, AsyncHTTPClientTransport.isCertificateRejection(underlying), var failure = classified as? FetchError else {
            return classified
        }
        failure.message = await CertificateDiagnosis.explain(host: target.key.host, port: target.key.port, tls: tls, fallback: failure.message)
        return failure
    }

    /// A failure of the connection or the protocol as a `FetchError` with its stable code; what the
    /// session's callbacks threw passes through as it is.
    static func classify(_ error: Error, url: String, afterHead: Bool) -> Error {
        if let failure = error as? TransportFailure { return classify(failure.underlying, url: url, afterHead: failure.afterHead) }
        if error is FetchError { return error }
        if error is ConnectionClosed || AsyncHTTPClientTransport.isClosedConnection(error) {
            return afterHead ? FetchError(.truncated, "the connection closed before the body was complete", url: url)
                : FetchError(.connection, "the connection closed before a response", url: url)
        }
        if let channel = error as? ChannelError, case .connectTimeout = channel {
            var timeout = FetchError(.timeout, "timed out (connect)", url: url)
            timeout.isNetworkDown = true
            return timeout
        }
        if let direct = error as? ConnectionOpener.DirectConnectFailure {
            var refused = FetchError(.connection, "cannot connect to \(direct.host):\(direct.port): \(Self.connectFailure(direct.underlying))", url: url)
            refused.isNetworkDown = AsyncHTTPClientTransport.isNetworkDown(direct.underlying)
            return refused
        }
        if let connect = error as? NIOConnectionError {
            let refusals = connect.connectionErrors.map { Self.connectFailure($0.error) }
            if refusals.isEmpty, connect.dnsAError != nil || connect.dnsAAAAError != nil {
                var dns = FetchError(.dns, "cannot resolve '\(connect.host)': \(connect.dnsAError ?? connect.dnsAAAAError!)", url: url)
                dns.isNetworkDown = AsyncHTTPClientTransport.isNetworkDown(connect)
                return dns
            }
            var refused = FetchError(.connection, "cannot connect to \(connect.host):\(connect.port): \(refusals.joined(separator: "; "))", url: url)
            refused.isNetworkDown = AsyncHTTPClientTransport.isNetworkDown(connect)
            return refused
        }
        if error is HTTPParserError || error is HTTP1ResponseParser.Failure {
            return afterHead ? FetchError(.truncated, "the response broke off: \(error)", url: url)
                : FetchError(.connection, "the server's response is not valid HTTP/1.1: \(error)", url: url)
        }
        return AsyncHTTPClientTransport.classify(error, url: url, afterHead: afterHead)
    }

    /// Why a connect failed, as the system says it: `Connection refused (errno 111)`. NIO's own
    /// text for a refused connect read `connection reset (error set): Connection refused) (errno: 111)`.
    static func connectFailure(_ error: Error) -> String {
        guard let io = error as? IOError else { return "\(error)" }
        return "\(String(cString: strerror(io.errnoCode))) (errno \(io.errnoCode))"
    }
}
