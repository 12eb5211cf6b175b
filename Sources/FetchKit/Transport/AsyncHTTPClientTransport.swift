import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The transport on AsyncHTTPClient: one client per run, its pool sized from `per_host`, redirects
/// left to FetchKit's `Redirector`, each response handled on its connection's event loop by a
/// `ResponseStream`, which also enforces the read (stall) and total deadlines. Requests with
/// `tls.pins` go through a client of their own per set of pins, whose connections are checked
/// after the handshake (`PublicKeyPins`); the other `tls` settings ride on each request. A request
/// whose URL the `ProxyResolver` sends through a proxy goes through a client configured with it
/// (AsyncHTTPClient's proxies are per client): `CONNECT` tunnels, or SOCKS5. Plain `http://`
/// requests to an HTTP proxy are forwarded instead (`ProxyForwarding`), as curl does.
public final class AsyncHTTPClientTransport: HTTPTransport {
    /// Which HTTP versions to offer (`settings.http_version`).
    public enum HTTPVersion: String, Sendable, CaseIterable {
        /// HTTP/2 where the server offers it over TLS (ALPN), HTTP/1.1 otherwise.
        case auto
        /// HTTP/1.1 only.
        case http1_1 = "1.1"
    }

    private let configuration: HTTPClient.Configuration
    private let client: HTTPClient
    /// Connections a host's pool keeps (`settings.per_host`).
    private let perHost: Int
    /// Clients for pinned or proxied requests, made on first use.
    private let others = LockedBox([ClientKey: HTTPClient]())
    private let tls = TLSSettings()
    private let proxies: ProxyResolver
    /// Proxies that answered 407 this run: not asked again (see `FetchError.Code.proxyAuth`).
    private let refusedProxies = LockedBox(Set<Proxy>())
    /// Forwarding proxies seen closing a connection we were about to reuse: sent `Connection: close`.
    private let closingProxies = LockedBox(Set<Proxy>())

    private struct ClientKey: Hashable {
        var pins: PublicKeyPins?
        var proxy: Proxy?
        /// Requests go to `proxy` in absolute form, not through a tunnel.
        var forwards = false
    }

    /// - Parameters:
    ///   - perHost: connections kept per host (`settings.per_host`) for HTTP/1.1; HTTP/2 multiplexes
    ///     a host's requests on one connection.
    ///   - connectTimeout: the client-wide connect timeout.
    ///   - httpVersion: `auto` negotiates HTTP/2 over TLS where the server offers it.
    ///   - proxies: which requests go through a proxy; `.direct` (none) unless given, the
    ///     environment is not read here (`fetchctl run` reads it, as curl does).
    public init(perHost: Int = 4, connectTimeout: Duration = TransportTimeouts.defaults.connect, httpVersion: HTTPVersion = .auto,
                proxies: ProxyResolver = .direct) {
        self.proxies = proxies
        self.perHost = max(1, perHost)
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(Int64(connectTimeout.inNanoseconds))),
            decompression: .disabled
        )
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(1, perHost)
        // A refused connection fails the attempt at once (as in curl); FetchKit's RetryPolicy decides
        // whether and when to try again, with its own backoff and budget.
        configuration.connectionPool.retryConnectionEstablishment = false
        // No distributed tracing: fetchctl bootstraps no tracer, and the default no-op one still
        // builds a span and its attributes for every request (a tenth of a small request's allocations).
        configuration.tracing.tracer = nil
        configuration.httpVersion = httpVersion == .http1_1 ? .http1Only : .automatic
        self.configuration = configuration
        client = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: configuration)
    }

    /// Closes every connection; call it once the run is over, on every path.
    public func shutdown() async throws {
        // Every client, even when one fails to shut down; the first failure is rethrown.
        var failure: Error?
        for each in [client] + others.withLock({ Array($0.values) }) {
            do { try await each.shutdown() } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// The client for requests pinned to `pins` or sent through `proxy` (made on first use), or
    /// the shared one.
    private func client(pins: PublicKeyPins?, proxy: Proxy?, forwards: Bool) -> HTTPClient {
        if pins == nil, proxy == nil { return client }
        return others.withLock { clients in
            let key = ClientKey(pins: pins, proxy: proxy, forwards: forwards)
            if let known = clients[key] { return known }
            var configuration = self.configuration
            if forwards {
                // Connections go to the proxy itself; every request on them is rewritten to absolute form.
                configuration.httpVersion = .http1Only
                configuration.http1_1ConnectionDebugInitializer = ProxyForwarding.install(on:)
            } else if let pins {
                configuration.http1_1ConnectionDebugInitializer = pins.connectionCheck
                configuration.http2ConnectionDebugInitializer = pins.connectionCheck
            }
            if let proxy, !forwards {
                switch proxy.kind {
                case .http:
                    let authorization = proxy.username.map { HTTPClient.Authorization.basic(username: $0, password: proxy.password ?? "") }
                    configuration.proxy = .server(host: proxy.host, port: proxy.port, authorization: authorization)
                case .socks5:
                    configuration.proxy = .socksServer(host: proxy.host, port: proxy.port)
                }
            }
            let made = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: configuration)
            clients[key] = made
            return made
        }
    }

    public func send(
        _ request: BuiltRequest,
        options: TransportOptions,
        onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
        onChunk: @escaping @Sendable (ByteBuffer) throws -> Void
    ) async throws {
        let url = Redactor.redactURLUserinfo(request.url.absoluteString)
        var headers = NIOHTTP1.HTTPHeaders()
        headers.reserveCapacity(request.headers.count)
        for header in request.headers { headers.add(name: header.name, value: header.value) }
        let trust = try tls.resolve(options.tls, url: url)
        let isHTTPS = request.url.scheme?.lowercased() == "https"
        if trust.pins != nil, !isHTTPS {
            throw FetchError(.tls, "tls.pins can only be checked over https://; the request was not sent", url: url)
        }
        let proxy = proxies.proxy(for: request.url)
        if let proxy, refusedProxies.withLock({ $0.contains(proxy) }) {
            throw FetchError(.proxyAuth, "the proxy \(proxy) refused the credentials earlier in this run; not asked again", url: url)
        }
        let forwardingProxy = proxy?.kind == .http && !isHTTPS ? proxy : nil
        var target = request.url
        var onHead = onHead
        if let forwardingProxy {
            guard let forwarded = ProxyForwarding.request(request.url, headers: &headers, via: forwardingProxy) else {
                throw FetchError(.invalidRequest, "the URL can't be sent through the proxy \(forwardingProxy)", url: url)
            }
            target = forwarded
            if closingProxies.withLock({ $0.contains(forwardingProxy) }) { headers.replaceOrAdd(name: "Connection", value: "close") }
            onHead = ProxyForwarding.refusal(of: forwardingProxy, refused: refusedProxies, url: url, then: onHead)
        }
        func outgoing() throws -> HTTPClient.Request {
            do {
                return try HTTPClient.Request(url: target, method: NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue),
                                              headers: headers, body: try Self.body(request.body), tlsConfiguration: trust.configuration)
            } catch let error as FetchError {
                throw error
            } catch {
                throw FetchError(.invalidRequest, "\(error)", url: url)
            }
        }
        let chosen = client(pins: trust.pins, proxy: proxy, forwards: forwardingProxy != nil)
        var stream = ResponseStream(timeouts: options.timeouts, url: url, networkWaiter: options.networkWaiter, onHead: onHead, onChunk: onChunk)
        var received: Int64 = 0
        do {
            // A forwarding proxy that closes every connection after its response without saying so
            // (tinyproxy does): a request can meet a reused connection as it closes. It is sent again
            // at once, as browsers do for an idempotent request, and from then on with `Connection:
            // close` to that proxy. Each such failure used up one of the pool's idle connections, so
            // there are at most as many as the pool holds.
            var resends = 0
            while true {
                do {
                    received = try await exchange(try outgoing(), on: chosen, stream: stream)
                    break
                } catch where Self.isClosedConnection(error) && forwardingProxy != nil && !stream.sawHead
                            && stream.failure == nil && request.method.isIdempotent && !Task.isCancelled && resends <= perHost {
                    resends += 1
                    if let forwardingProxy { closingProxies.withLock { _ = $0.insert(forwardingProxy) } }
                    headers.replaceOrAdd(name: "Connection", value: "close")
                    stream = ResponseStream(timeouts: options.timeouts, url: url, networkWaiter: options.networkWaiter, onHead: onHead, onChunk: onChunk)
                }
            }
        } catch {
            // What the callbacks or the watchdog threw is the reason; AsyncHTTPClient's own errors are classified.
            if let reason = stream.failure { throw reason }
            if let fetch = error as? FetchError { throw fetch }
            if Task.isCancelled { throw FetchError(.cancelled, "cancelled", url: url) }
            var classified = Self.classify(error, url: url, afterHead: stream.sawHead)
            if let proxy, !stream.sawHead, let failure = Self.proxyFailure(error, classified: classified, proxy: proxy, url: url) {
                if failure.code == .proxyAuth { refusedProxies.withLock { _ = $0.insert(proxy) } }
                throw failure
            }
            if Self.isCertificateRejection(error), proxy == nil, let host = request.url.host {
                // Which certificate, and why: a second look at it (nothing is sent). Not through a
                // proxy: the look goes straight to the server, which a proxied client may not reach.
                let port = request.url.port ?? (request.url.scheme == "https" ? 443 : 80)
                classified.message = await CertificateDiagnosis.explain(host: host, port: port, tls: options.tls, fallback: classified.message)
            }
            throw classified
        }
        if let head = stream.head, let expected = head.expectedLength, received < expected, request.method != .head, head.status != 304 {
            throw FetchError(.truncated, "the body ended after \(received) of \(expected) bytes", url: url, status: head.status)
        }
    }

    /// Runs one exchange to its end: the body's byte count, or AsyncHTTPClient's error.
    private func exchange(_ outgoing: HTTPClient.Request, on client: HTTPClient, stream: ResponseStream) async throws -> Int64 {
        let task = client.execute(request: outgoing, delegate: stream, eventLoop: .indifferent, deadline: nil, logger: nil)
        return try await withTaskCancellationHandler {
            try await task.futureResult.get()
        } onCancel: {
            task.cancel()
        }
    }

    // MARK: - Request bodies

    static func body(_ body: RequestBody) throws -> HTTPClient.Body? {
        switch body {
        case .none: return nil
        case .data(let data): return .byteBuffer(ByteBuffer(bytes: data))
        case .file(let path):
            let size = try MultipartFormData.fileSize(path)
            return stream(FileChunks(path: path), length: size)
        case .multipart(let form):
            let length = try form.contentLength()
            if length <= MultipartFormData.encodingMemoryThreshold { return .byteBuffer(ByteBuffer(bytes: try form.encode())) }
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("fetchctl-multipart-\(UUID().uuidString)")
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw FetchError(.io, "cannot create a temporary file for the multipart body in '\(url.deletingLastPathComponent().path)'")
            }
            let handle = try FileHandle(forWritingTo: url)
            defer { try? handle.close() }
            try form.write { try handle.write(contentsOf: $0) }
            return stream(FileChunks(path: url.path, deleteWhenDone: true), length: length)
        }
    }

    /// A body read from a file as it is sent, one 64 KiB chunk at a time.
    private static func stream(_ chunks: FileChunks, length: Int64) -> HTTPClient.Body {
        .stream(contentLength: length) { writer in
            let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Void.self)
            promise.completeWithTask {
                for try await chunk in chunks { try await writer.write(.byteBuffer(chunk)).get() }
            }
            return promise.futureResult
        }
    }

    // MARK: - Errors

    /// Maps AsyncHTTPClient and NIO errors to stable codes, marking those a network outage causes.
    static func classify(_ error: Error, url: String, afterHead: Bool) -> FetchError {
        var classified = classifyCode(error, url: url, afterHead: afterHead)
        if !afterHead, isNetworkDown(error) { classified.isNetworkDown = true }
        return classified
    }

    /// A failure before any response, with a proxy in the way, that is the proxy's: it refused the
    /// tunnel (407 and other statuses, a timeout), or could not be reached at all (every connection
    /// goes to the proxy, so a refused or unresolvable connection is the proxy's). Credentials are
    /// never shown: the proxy is named as `http://<redacted>@host:port`.
    static func proxyFailure(_ error: Error, classified: FetchError, proxy: Proxy, url: String) -> FetchError? {
        if let client = error as? HTTPClientError {
            switch client {
            case .proxyAuthenticationRequired:
                let why = proxy.username == nil ? "it asks for credentials (give them in the proxy URL)" : "it refused the credentials"
                return FetchError(.proxyAuth, "the proxy \(proxy) answered 407: \(why)", url: url)
            case .invalidProxyResponse:
                return FetchError(.proxy, "the proxy \(proxy) refused the tunnel to the server (wrong or missing credentials, or a blocked host or port)", url: url)
            case .httpProxyHandshakeTimeout, .socksHandshakeTimeout:
                return FetchError(.proxy, "the proxy \(proxy) did not answer in time", url: url)
            default: break
            }
        }
        if "\(error)".contains("SOCKS") { return FetchError(.proxy, "the SOCKS5 proxy \(proxy) failed: \(error)", url: url) }
        switch classified.code {
        case .connection, .dns:
            var failure = FetchError(.proxy, "cannot reach the proxy \(proxy): \(classified.message)", url: url)
            failure.isNetworkDown = classified.isNetworkDown
            return failure
        default:
            return nil
        }
    }

    /// The connection was closed or reset under the request, before any response: what a reused
    /// connection meets when the other side closed it a moment before.
    static func isClosedConnection(_ error: Error) -> Bool {
        if let client = error as? HTTPClientError { return client == .remoteConnectionClosed }
        if let channel = error as? ChannelError {
            switch channel {
            case .ioOnClosedChannel, .alreadyClosed, .outputClosed, .eof: return true
            default: return false
            }
        }
        if let io = error as? IOError { return [ECONNRESET, EPIPE].contains(io.errnoCode) }
        return false
    }

    /// The server's certificate failed verification: an untrusted or expired chain, or another host's.
    static func isCertificateRejection(_ error: Error) -> Bool {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname { return true }
        guard let ssl = error as? NIOSSLError, case .handshakeFailed(let reason) = ssl else { return false }
        return "\(reason)".contains("CERTIFICATE_VERIFY_FAILED")
    }

    /// No route, network down, a temporary name resolution failure (EAI_AGAIN), a connect timeout:
    /// what a request meets while the network is gone, as opposed to a refusal by a live server.
    static func isNetworkDown(_ error: Error) -> Bool {
        if let io = error as? IOError { return [ENETUNREACH, EHOSTUNREACH, ENETDOWN].contains(io.errnoCode) }
        if let client = error as? HTTPClientError, client == .connectTimeout { return true }
        if let channel = error as? ChannelError, case .connectTimeout = channel { return true }
        // Wrapped errors (NIOConnectionError's per-address failures, resolver errors) by their text.
        let text = String(describing: error)
        return ["Network is unreachable", "No route to host", "Network is down", "Temporary failure in name resolution",
                "(errno: 101)", "(errno: 113)", "(errno: 100)"].contains { text.contains($0) }
    }

    private static func classifyCode(_ error: Error, url: String, afterHead: Bool) -> FetchError {
        if let fetch = error as? FetchError { return fetch }
        if error is CancellationError { return FetchError(.cancelled, "cancelled", url: url) }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded, .getConnectionFromPoolTimeout:
                return FetchError(.timeout, "timed out (\(client))", url: url)
            case .tlsHandshakeTimeout:
                return FetchError(.tlsHandshake, "TLS handshake timed out", url: url)
            case .remoteConnectionClosed, .bodyLengthMismatch:
                return afterHead ? FetchError(.truncated, "the connection closed before the body was complete", url: url)
                    : FetchError(.connection, "the connection closed before a response", url: url)
            case .cancelled, .requestStreamCancelled:
                return FetchError(.cancelled, "cancelled", url: url)
            default:
                return FetchError(.connection, "\(client)", url: url)
            }
        }
        if let mismatch = error as? PinMismatch { return FetchError(.tlsPinMismatch, mismatch.description, url: url) }
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return FetchError(.tls, "the server's certificate is not valid for this host", url: url)
        }
        if isCertificateRejection(error) {
            return FetchError(.tls, "the server's certificate failed verification (CERTIFICATE_VERIFY_FAILED)", url: url)
        }
        let text = String(describing: error)
        if text.contains("ALERT_HANDSHAKE_FAILURE") || text.contains("CERTIFICATE_REQUIRED") || text.contains("ALERT_BAD_CERTIFICATE") {
            return FetchError(.tls, "the server refused the TLS handshake; does it require a client certificate (tls.client_cert)? (\(text))", url: url)
        }
        if text.contains("NIOSSL") || text.contains("TLS") || text.contains("SSL") {
            return FetchError(.tlsHandshake, text, url: url)
        }
        if text.lowercased().contains("dns") || text.contains("getaddrinfo") || text.contains("resolve") {
            return FetchError(.dns, text, url: url)
        }
        if afterHead { return FetchError(.truncated, "the body failed: \(text)", url: url) }
        return FetchError(.connection, text, url: url)
    }
}
