import Foundation
import NIOCore

/// Deadlines for one attempt. `read` is the longest silence allowed between body chunks (a stall
/// watchdog), which AsyncHTTPClient's own deadline does not cover.
public struct TransportTimeouts: Sendable, Equatable {
    public var connect: Duration
    public var read: Duration
    public var total: Duration?

    /// Built-in defaults: connect 30 s, read 60 s, no total limit.
    public static let defaults = TransportTimeouts(connect: .seconds(30), read: .seconds(60), total: nil)

    public init(connect: Duration, read: Duration, total: Duration?) {
        self.connect = connect
        self.read = read
        self.total = total
    }

    /// The timeouts a route's `timeout` block asks for, built-in defaults for what it leaves unset.
    public init(_ options: TimeoutOptions) {
        self.init(connect: options.connect ?? Self.defaults.connect, read: options.read ?? Self.defaults.read,
                  total: options.total ?? Self.defaults.total)
    }
}

/// Everything a transport needs to know about one attempt besides the request itself.
public struct TransportOptions: Sendable, Equatable {
    public var timeouts: TransportTimeouts
    /// `tls`: extra trust anchors, pins, `insecure`.
    public var tls: TLSOptions
    /// While it says the network is gone, a stalled response is not failed by the read timeout: it
    /// waits with the rest of the run, up to `max_wait` (then `offline`).
    public var networkWaiter: NetworkWaiter?

    public init(timeouts: TransportTimeouts = .defaults, tls: TLSOptions = TLSOptions(), networkWaiter: NetworkWaiter? = nil) {
        self.timeouts = timeouts
        self.tls = tls
        self.networkWaiter = networkWaiter
    }

    public static func == (lhs: TransportOptions, rhs: TransportOptions) -> Bool {
        lhs.timeouts == rhs.timeouts && lhs.tls == rhs.tls && lhs.networkWaiter === rhs.networkWaiter
    }
}

/// A response head as the transport received it.
public struct TransportResponseHead: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    /// `Content-Length`, when the server sent one (after decoding it is the encoded length).
    public var expectedLength: Int64?
    /// The protocol the response came over: "1.1", "2" (nil for a stored response).
    public var httpVersion: String?
}

/// Sends one request and streams its response: the head to `onHead`, then every body chunk to
/// `onChunk`, in order. The callbacks run on the transport's I/O thread as the bytes arrive and
/// must not wait for long (validating, decoding and writing a chunk to a file are fine); the next
/// chunk is read only after `onChunk` returns, and a throw ends the exchange with that error.
/// (`NIOTransport` runs a small HTTP/2 response's callbacks on the request's own event loop
/// instead, still in order and before the send returns: `HomeRelay`.)
/// A protocol so tests can substitute a transport only where the local server can't produce a case.
public protocol HTTPTransport: Sendable {
    func send(
        _ request: BuiltRequest,
        options: TransportOptions,
        onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
        onChunk: @escaping @Sendable (ByteBuffer) throws -> Void
    ) async throws

    /// Releases connections; called once when the owner is done with the transport.
    func shutdown() async throws

    /// Opens a connection for `request`'s host ahead of its first request, if the transport keeps
    /// connections and has none there: the connect (and TLS handshake) then happen while the
    /// caller is still getting ready. Returns at once; a connection that fails is not reported
    /// (the request reports its own). The default does nothing.
    func preconnect(for request: BuiltRequest, options: TransportOptions)
}

extension HTTPTransport {
    public func shutdown() async throws {}
    public func preconnect(for request: BuiltRequest, options: TransportOptions) {}

    /// Sends with default TLS settings.
    public func send(
        _ request: BuiltRequest,
        timeouts: TransportTimeouts,
        onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
        onChunk: @escaping @Sendable (ByteBuffer) throws -> Void
    ) async throws {
        try await send(request, options: TransportOptions(timeouts: timeouts), onHead: onHead, onChunk: onChunk)
    }
}
