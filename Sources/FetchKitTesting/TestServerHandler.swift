import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL
import X509

/// Reads a request, asks the routes for a `Reply`, and writes it: in blocks, waiting for each write,
/// with the delays, stalls and drops the reply asks for.
final class TestServerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: TestServerState
    /// False on an HTTP/2 stream's channel: a stream is not a connection (the TLS server counts those).
    private let countsConnections: Bool
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var keepAlive = true
    /// `drop_next=1` was asked: the connection's next request is not answered, the connection is
    /// closed instead (a kept-alive connection the server gave up on as the client reused it).
    private var dropsNextRequest = false
    /// `goaway=1` was asked on an HTTP/2 stream: once its response is sent, the connection says
    /// GOAWAY (no stream after this one) and closes two seconds later.
    private var goesAway = false

    static let blockSize = 64 * 1024

    init(state: TestServerState, countsConnections: Bool = true) {
        self.state = state
        self.countsConnections = countsConnections
    }

    func channelActive(context: ChannelHandlerContext) {
        if countsConnections { state.connectionOpened() }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if countsConnections { state.connectionClosed() }
        context.fireChannelInactive()
    }

    /// The subject of the client certificate on this connection, if one was presented. An HTTP/1.1
    /// connection holds its TLS handler; an HTTP/2 stream's is on its parent, the connection (an
    /// HTTP/1.1 connection's parent is the listening socket).
    private func clientCertificate(_ context: ChannelHandlerContext) -> String? {
        let connection = context.channel.parent?.parent == nil ? context.channel : context.channel.parent!
        guard let peer = try? connection.pipeline.syncOperations.nioSSL_peerCertificate(),
              let certificate = try? Certificate(derEncoded: peer.toDERBytes()) else { return nil }
        return certificate.subject.description
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if dropsNextRequest {
                context.close(promise: nil)
                return
            }
            self.head = head
            body = []
            keepAlive = head.isKeepAlive
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head else { return }
            self.head = nil
            let components = URLComponents(string: head.uri)
            var query: [String: String] = [:]
            for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
            let request = ServerRequest(method: head.method, uri: head.uri, path: components?.path ?? head.uri,
                                        query: query, headers: head.headers, body: body)
            state.requestStarted(RecordedRequest(
                method: head.method.rawValue, uri: head.uri, path: request.path,
                headers: head.headers.map { ($0.name, $0.value) }, bodyBytes: body.count, body: Array(body.prefix(65_536)), time: .now,
                httpVersion: head.version.major == 2 ? "HTTP/2" : "HTTP/1.1", clientCertificate: clientCertificate(context)))
            var reply = TestServerRoutes.reply(to: request, state: state)
            reply.compressible = query["compress"] == "1"
            dropsNextRequest = query["drop_next"] == "1"
            goesAway = query["goaway"] == "1"
            if head.method == .HEAD {
                // RFC 9110 §9.3.2: the GET response's headers (Content-Length included), no body.
                reply.headers.append(("Content-Length", String(reply.body.count)))
                reply.body = .bytes([])
                reply.sendsContentLength = false
            }
            if let count = query["until_requests"].flatMap(Int.init) {
                // Held until the server has had `count` requests, or for `delay` at most: a test
                // that needs others' requests to arrive while this one is open doesn't rely on time.
                holdUntil(requests: count, deadline: .now() + reply.delay, reply, context: context)
            } else if reply.delay > .zero {
                context.eventLoop.assumeIsolated().scheduleTask(in: reply.delay) {
                    self.send(reply, context: context)
                }
            } else {
                send(reply, context: context)
            }
        }
    }

    private func holdUntil(requests count: Int, deadline: NIODeadline, _ reply: Reply, context: ChannelHandlerContext) {
        if state.requests.count >= count || NIODeadline.now() >= deadline {
            send(reply, context: context)
            return
        }
        context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(2)) {
            self.holdUntil(requests: count, deadline: deadline, reply, context: context)
        }
    }

    private func send(_ reply: Reply, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(reply.headers)
        if reply.sendsContentLength, headers["Content-Length"].isEmpty {
            headers.replaceOrAdd(name: "Content-Length", value: String(reply.body.count))
        }
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        if reply.compressible { headers.add(name: TestServer.compressMarker, value: "1") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: reply.status, headers: headers))), promise: nil)
        writeBody(reply, from: 0, context: context)
    }

    /// Sends GOAWAY on an HTTP/2 stream's connection, naming that stream the last one served, and
    /// closes the connection two seconds later.
    private static func goAway(from stream: Channel) {
        guard let connection = stream.parent, connection.parent != nil,
              let id = try? stream.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID) else { return }
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: id, errorCode: .noError, opaqueData: nil))
        connection.writeAndFlush(frame, promise: nil)
        connection.eventLoop.scheduleTask(in: .seconds(2)) { connection.close(promise: nil) }
    }

    /// Writes the body from `offset`, one block per write, honouring drop and stall points.
    private func writeBody(_ reply: Reply, from offset: Int, context: ChannelHandlerContext) {
        let total = reply.body.count
        if let drop = reply.dropAfter, offset >= drop {
            context.flush()
            state.requestFinished()
            context.close(promise: nil)
            return
        }
        if offset >= total {
            let keepAlive = self.keepAlive
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                self.state.requestFinished()
                if !keepAlive { context.close(promise: nil) }
                if self.goesAway { Self.goAway(from: context.channel) }
            }
            return
        }
        var end = min(total, offset + Self.blockSize)
        if let drop = reply.dropAfter { end = min(end, drop) }
        if let stall = reply.stallAfter, offset < stall { end = min(end, stall) }
        var buffer = context.channel.allocator.buffer(capacity: end - offset)
        switch reply.body {
        case .bytes(let bytes): buffer.writeBytes(bytes[offset..<end])
        case .generated(let range, let seed):
            buffer.writeBytes(GeneratedBytes.block(offset: range.lowerBound + offset, count: end - offset, seed: seed))
        case .slice(let bytes, let range): buffer.writeBytes(bytes[(range.lowerBound + offset)..<(range.lowerBound + end)])
        }
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer)))).assumeIsolated().whenComplete { result in
            guard case .success = result else {
                self.state.requestFinished()
                return
            }
            if let stall = reply.stallAfter, end == stall, reply.stallFor > .zero {
                context.eventLoop.assumeIsolated().scheduleTask(in: reply.stallFor) {
                    self.writeBody(reply, from: end, context: context)
                }
            } else {
                self.writeBody(reply, from: end, context: context)
            }
        }
    }
}
