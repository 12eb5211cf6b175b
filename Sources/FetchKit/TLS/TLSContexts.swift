import NIOCore
import NIOSSL
import NIOTLS

/// The TLS contexts of `HTTP1Transport`'s HTTPS connections, one per distinct `tls` block, made on
/// first use and kept for the run: building one parses the trust store (the system's bundle, about
/// 15 ms), so it must not happen per connection. Each offers HTTP/1.1 only in ALPN, as
/// AsyncHTTPClient does with `http_version: 1.1`.
final class TLSContexts: Sendable {
    /// What a connection needs for its handshake and the check after it.
    struct Security: Sendable {
        var context: NIOSSLContext
        var pins: PublicKeyPins?
    }

    private let settings = TLSSettings()
    private let made = LockedBox([TLSOptions: Result<Security, FetchError>]())

    /// The context for `options`; a `tls` error (naming the file or setting) when they can't be
    /// used. `url` (redacted) goes into that error.
    func security(for options: TLSOptions, url: String) throws -> Security {
        if let known = made.withLock({ $0[options] }) { return try Self.located(known, url: url) }
        let result = Result { () throws -> Security in
            let resolved = try settings.resolve(options, url: url)
            var configuration = resolved.configuration ?? TLSConfiguration.makeClientConfiguration()
            configuration.applicationProtocols = ["http/1.1"]
            do {
                return Security(context: try NIOSSLContext(configuration: configuration), pins: resolved.pins)
            } catch {
                throw FetchError(.tls, "cannot set up TLS: \(error); the request was not sent", url: url)
            }
        }.mapError { $0 as? FetchError ?? FetchError(.tls, "\($0)", url: url) }
        made.withLock { $0[options] = $0[options] ?? result }
        return try Self.located(result, url: url)
    }

    /// The context already made for `options` (by `security(for:url:)`, which every request calls
    /// before it asks for a connection).
    func made(for options: TLSOptions) -> Security? {
        made.withLock { try? $0[options]?.get() }
    }

    private static func located(_ result: Result<Security, FetchError>, url: String) throws -> Security {
        do {
            return try result.get()
        } catch {
            var error = error
            error.url = url
            throw error
        }
    }
}

/// Waits for the TLS handshake of a new connection: `handshake` succeeds once NIOSSL reports it
/// complete, and fails with the handshake's error or when the connection closes first. Removed
/// from the pipeline once the handshake is over.
final class TLSHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = NIOAny

    let handshake: EventLoopPromise<Void>

    init(handshake: EventLoopPromise<Void>) {
        self.handshake = handshake
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            handshake.succeed(())
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        handshake.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        handshake.fail(HTTP1ConnectionClosed())
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        handshake.fail(HTTP1ConnectionClosed())  // nothing once it has succeeded
    }
}
