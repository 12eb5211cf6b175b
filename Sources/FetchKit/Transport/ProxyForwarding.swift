import Foundation
import NIOCore
import NIOHTTP1

/// Plain `http://` requests through an HTTP proxy are forwarded, as curl and browsers do: the
/// request goes to the proxy with its target in absolute form (`GET http://host/path HTTP/1.1`),
/// and the proxy fetches it. AsyncHTTPClient only tunnels (`CONNECT`, for every scheme), which many
/// corporate proxies refuse for port 80 (squid's default configuration and tinyproxy's shipped one
/// allow `CONNECT` to port 443 only), and which hides plain requests from the proxy's cache and
/// filters.
///
/// So a forwarded request is sent by a client of its own, configured without a proxy: its URL is
/// rewritten to the proxy's address, the origin goes in the `Host` header, and `AbsoluteFormTarget`,
/// added to each of that client's connections, turns the request line's target back into the
/// origin's absolute URL just before it is encoded.
enum ProxyForwarding {
    /// The request as the forwarding client sends it: to `proxy`, with `Host` naming the origin
    /// (unless the request names one itself) and the proxy's credentials as `Proxy-Authorization`.
    static func request(_ url: URL, headers: inout NIOHTTP1.HTTPHeaders, via proxy: Proxy) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false), let host = url.host else { return nil }
        if !headers.contains(name: "Host") {
            let name = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
            headers.add(name: "Host", value: url.port.map { $0 == 80 ? name : "\(name):\($0)" } ?? name)
        }
        if let username = proxy.username {
            let credentials = Data("\(username):\(proxy.password ?? "")".utf8).base64EncodedString()
            headers.replaceOrAdd(name: "Proxy-Authorization", value: "Basic \(credentials)")
        }
        components.scheme = "http"
        components.user = nil
        components.password = nil
        components.host = proxy.host.contains(":") ? "[\(proxy.host)]" : proxy.host
        components.port = proxy.port
        if components.percentEncodedPath.isEmpty { components.percentEncodedPath = "/" }
        return components.url
    }

    /// `onHead`, after turning a 407 into `proxy_auth`: a forwarding proxy's refusal is a response
    /// like any other on the wire, and the proxy is not asked again in the run.
    static func refusal(of proxy: Proxy, refused: LockedBox<Set<Proxy>>, url: String,
                        then onHead: @escaping @Sendable (TransportResponseHead) throws -> Void) -> @Sendable (TransportResponseHead) throws -> Void {
        { head in
            if head.status == 407 {
                refused.withLock { _ = $0.insert(proxy) }
                let why = proxy.username == nil ? "it asks for credentials (give them in the proxy URL)" : "it refused the credentials"
                throw FetchError(.proxyAuth, "the proxy \(proxy) answered 407: \(why)", url: url)
            }
            try onHead(head)
        }
    }

    /// The forwarding client's connection initializer: puts `AbsoluteFormTarget` between
    /// AsyncHTTPClient's request handler and the encoder, on the channel's own event loop.
    @Sendable static func install(on channel: Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            let encoder = try pipeline.handler(type: HTTPRequestEncoder.self)
            try pipeline.addHandler(AbsoluteFormTarget(), position: .after(encoder))
        }
    }
}

/// Rewrites an origin-form request target (`/path?query`) to absolute form
/// (`http://<Host header>/path?query`), which is what a forward proxy reads (RFC 9112 §3.2.2).
final class AbsoluteFormTarget: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data), head.uri.hasPrefix("/"), let host = head.headers.first(name: "Host") else {
            return context.write(data, promise: promise)
        }
        head.uri = "http://\(host)\(head.uri)"
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}
