import NIOSSL

/// The TLS contexts of `NIOTransport`'s HTTPS connections, one per distinct `tls` block, made on
/// first use and kept for the run: building one parses the trust store (the system's bundle, about
/// 15 ms), so it must not happen per connection. ALPN offers HTTP/2 and HTTP/1.1, or HTTP/1.1 only
/// (`http_version: 1.1`), as AsyncHTTPClient does.
final class TLSContexts: Sendable {
    /// What a connection needs for its handshake and the check after it.
    struct Security: Sendable {
        var context: NIOSSLContext
        var pins: PublicKeyPins?
    }

    private let settings = TLSSettings()
    private let made = LockedBox([TLSOptions: Result<Security, FetchError>]())
    private let applicationProtocols: [String]

    init(offersHTTP2: Bool) {
        applicationProtocols = offersHTTP2 ? ["h2", "http/1.1"] : ["http/1.1"]
    }

    /// The context for `options`; a `tls` error (naming the file or setting) when they can't be
    /// used. `url` (redacted) goes into that error.
    func security(for options: TLSOptions, url: String) throws -> Security {
        if let known = made.withLock({ $0[options] }) { return try known.get(locatedAt: url) }
        let result = Result { [applicationProtocols] () throws -> Security in
            let resolved = try settings.resolve(options, url: url)
            var configuration = resolved.configuration ?? {
                var standard = TLSConfiguration.makeClientConfiguration()
                standard.trustRoots = TLSSettings.systemTrustRoots
                return standard
            }()
            configuration.applicationProtocols = applicationProtocols
            do {
                return Security(context: try NIOSSLContext(configuration: configuration), pins: resolved.pins)
            } catch {
                throw FetchError(.tls, "cannot set up TLS: \(error); the request was not sent", url: url)
            }
        }.mapError { $0 as? FetchError ?? FetchError(.tls, "\($0)", url: url) }
        made.withLock { $0[options] = $0[options] ?? result }
        return try result.get(locatedAt: url)
    }

    /// The context already made for `options` (by `security(for:url:)`, which every request calls
    /// before it asks for a connection).
    func made(for options: TLSOptions) -> Security? {
        made.withLock { try? $0[options]?.get() }
    }
}
