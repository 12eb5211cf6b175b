import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A forward proxy on 127.0.0.1, port 0, for tests: it answers `CONNECT host:port` by opening a
/// TCP connection there and relaying bytes both ways (a TLS session then runs end to end through
/// it), and forwards plain requests in absolute form (`GET http://host:port/path`) by sending
/// them on to the origin and passing the response back. It can require `Proxy-Authorization: Basic` credentials (407 otherwise) or refuse every
/// tunnel (403), and it records what it was asked, so tests can tell a request went through it.
public final class TestProxy: Sendable {
    public let port: Int
    private let channel: Channel
    private let group: MultiThreadedEventLoopGroup
    private let log: NIOLockedValueBox<[Request]>

    /// One `CONNECT` or forwarded request as the proxy saw it.
    public struct Request: Sendable {
        /// `host:port` for a `CONNECT`, the absolute URL for a forwarded request.
        public var target: String
        public var method: String
        public var proxyAuthorization: String?
        /// The status the proxy answered: 200, 403, 407, 502.
        public var status: Int
    }

    public enum Mode: Sendable {
        case open
        case requiresCredentials(username: String, password: String)
        case refuses
    }

    /// `http://127.0.0.1:<port>`
    public var url: String { "http://127.0.0.1:\(port)" }

    /// Every `CONNECT` and forwarded request so far, in order.
    public var requests: [Request] { log.withLockedValue { $0 } }

    private init(port: Int, channel: Channel, group: MultiThreadedEventLoopGroup, log: NIOLockedValueBox<[Request]>) {
        self.port = port
        self.channel = channel
        self.group = group
        self.log = log
    }

    public static func start(_ mode: Mode = .open) async throws -> TestProxy {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let log = NIOLockedValueBox<[Request]>([])
        do {
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let decoder = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes))
                        let encoder = HTTPResponseEncoder()
                        try channel.pipeline.syncOperations.addHandler(decoder)
                        try channel.pipeline.syncOperations.addHandler(encoder)
                        try channel.pipeline.syncOperations.addHandler(ConnectHandler(mode: mode, log: log, decoder: decoder, encoder: encoder))
                    }
                }
                .bind(host: "127.0.0.1", port: 0)
                .get()
            guard let port = channel.localAddress?.port else { throw TestServerError.noPort }
            return TestProxy(port: port, channel: channel, group: group, log: log)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    public func shutdown() async throws {
        try? await channel.close()
        try await group.shutdownGracefully()
    }
}

/// Reads one `CONNECT`, decides, and on success turns the connection into a relay; or forwards
/// one absolute-form request and stays an HTTP connection for the next.
private final class ConnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let mode: TestProxy.Mode
    let log: NIOLockedValueBox<[TestProxy.Request]>
    let decoder: ByteToMessageHandler<HTTPRequestDecoder>
    let encoder: HTTPResponseEncoder
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()

    init(mode: TestProxy.Mode, log: NIOLockedValueBox<[TestProxy.Request]>, decoder: ByteToMessageHandler<HTTPRequestDecoder>,
         encoder: HTTPResponseEncoder) {
        self.mode = mode
        self.log = log
        self.decoder = decoder
        self.encoder = encoder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
        case .body(var chunk): body.writeBuffer(&chunk)
        case .end:
            guard let head else { return }
            self.head = nil
            answer(head, context: context)
        }
    }

    private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let authorization = head.headers.first(name: "Proxy-Authorization")
        let log = self.log
        @Sendable func record(_ status: Int) {
            log.withLockedValue { $0.append(.init(target: head.uri, method: head.method.rawValue, proxyAuthorization: authorization, status: status)) }
        }
        let forwards = head.method != .CONNECT && head.uri.lowercased().hasPrefix("http://")
        guard head.method == .CONNECT || forwards else { return respond(405, context: context, record: record) }
        switch mode {
        case .refuses:
            return respond(403, context: context, record: record)
        case .requiresCredentials(let username, let password):
            let expected = "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
            if authorization != expected { return respond(407, context: context, record: record) }
        case .open:
            break
        }
        if forwards { return forward(head, context: context, record: record) }
        let parts = head.uri.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else { return respond(400, context: context, record: record) }
        let client = context.channel
        ClientBootstrap(group: context.eventLoop)
            .connect(host: String(parts[0]), port: port)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .failure:
                    self.respond(502, context: context, record: record)
                case .success(let upstream):
                    record(200)
                    context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok))), promise: nil)
                    context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
                    // From here on, bytes: the HTTP handlers go, and each side relays to the other.
                    let sync = client.pipeline.syncOperations
                    _ = sync.removeHandler(self.encoder)
                    _ = sync.removeHandler(self.decoder)
                    _ = sync.removeHandler(context: context)
                    let (a, b) = Relay.pair()
                    try? sync.addHandler(a)
                    try? upstream.pipeline.syncOperations.addHandler(b)
                }
            }
    }

    /// Sends the request on to its origin on a connection of its own (origin form, `Connection:
    /// close`, no `Proxy-Authorization`) and passes the response back as it arrives.
    private func forward(_ head: HTTPRequestHead, context: ChannelHandlerContext, record: @escaping @Sendable (Int) -> Void) {
        guard let url = URL(string: head.uri), let host = url.host else { return respond(400, context: context, record: record) }
        var upstreamHead = head
        upstreamHead.uri = (url.path.isEmpty ? "/" : url.path) + (url.query.map { "?" + $0 } ?? "")
        upstreamHead.headers.remove(name: "Proxy-Authorization")
        upstreamHead.headers.replaceOrAdd(name: "Connection", value: "close")
        let body = self.body
        let client = context.channel
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ForwardedResponse(client: client, record: record))
                }
            }
            .connect(host: host, port: url.port ?? 80)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .failure:
                    self.respond(502, context: context, record: record)
                case .success(let upstream):
                    upstream.write(HTTPClientRequestPart.head(upstreamHead), promise: nil)
                    if body.readableBytes > 0 { upstream.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
                    upstream.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                }
            }
    }

    private func respond(_ status: Int, context: ChannelHandlerContext, record: (Int) -> Void) {
        record(status)
        var headers = HTTPHeaders([("Content-Length", "0"), ("Connection", "close")])
        if status == 407 { headers.add(name: "Proxy-Authenticate", value: "Basic realm=\"test proxy\"") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}

/// Passes an origin's response back to the proxy's client, without the origin's hop-by-hop
/// `Connection` header (the client's connection stays open), and records its status.
private final class ForwardedResponse: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    let client: Channel
    let record: @Sendable (Int) -> Void

    init(client: Channel, record: @escaping @Sendable (Int) -> Void) {
        self.client = client
        self.record = record
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(var head):
            record(Int(head.status.code))
            head.headers.remove(name: "Connection")
            client.write(HTTPServerResponsePart.head(head), promise: nil)
        case .body(let chunk):
            client.write(HTTPServerResponsePart.body(.byteBuffer(chunk)), promise: nil)
        case .end(let trailers):
            client.writeAndFlush(HTTPServerResponsePart.end(trailers), promise: nil)
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        client.close(promise: nil)
        context.close(promise: nil)
    }
}

/// Two handlers that pass whatever one channel reads to the other's channel, and close both when
/// either closes (NIO's "glue" pattern; no backpressure: test traffic is small).
private final class Relay: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: Relay?
    private var context: ChannelHandlerContext?

    static func pair() -> (Relay, Relay) {
        let a = Relay(), b = Relay()
        a.partner = b
        b.partner = a
        return (a, b)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.write(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.close()
    }

    private func write(_ data: NIOAny) {
        context?.write(data, promise: nil)
    }

    private func flush() {
        context?.flush()
    }

    private func close() {
        context?.close(promise: nil)
    }
}
