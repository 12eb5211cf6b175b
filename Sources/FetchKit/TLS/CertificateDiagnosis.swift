import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import X509

/// Says which certificate a server presented and why it was refused, for the `tls` error of a
/// failed handshake. BoringSSL tells the client only that verification failed; so, once a request
/// has failed that way, a second connection takes the server's certificate without verifying it
/// (nothing is sent on it) and this checks it the way the handshake did: its dates, the names it is
/// valid for, and otherwise its issuer, which is then one the trust store doesn't hold.
enum CertificateDiagnosis {
    /// A sentence for the error message: `certificate 'CN=…' issued by 'CN=…': expired on …`.
    /// Falls back to `fallback` when the server can't be reached again or shows no certificate.
    static func explain(host: String, port: Int, tls: TLSOptions, fallback: String) async -> String {
        guard let leaf = await peerCertificate(host: host, port: port) else { return fallback }
        return describe(leaf, host: host, now: Date(), caFileGiven: tls.caFile != nil)
    }

    /// The reason for `certificate` presented by `host` (the checks in the handshake's order of
    /// usefulness: dates, then names, then the issuer).
    static func describe(_ certificate: Certificate, host: String, now: Date, caFileGiven: Bool) -> String {
        let named = "certificate '\(certificate.subject)' issued by '\(certificate.issuer)'"
        let day = Date.ISO8601FormatStyle().year().month().day()
        if now > certificate.notValidAfter {
            return "\(named): expired on \(certificate.notValidAfter.formatted(day))"
        }
        if now < certificate.notValidBefore {
            return "\(named): not valid before \(certificate.notValidBefore.formatted(day))"
        }
        let names = subjectNames(certificate)
        if !names.isEmpty, !names.contains(where: { matches($0, host: host) }) {
            return "\(named): valid for \(names.joined(separator: ", ")), not for \(host) (wrong host)"
        }
        let hint = caFileGiven ? "tls.ca_file does not hold the CA that issued it" : "a private CA is trusted with tls.ca_file"
        return "\(named): unknown issuer, not in the trust store (\(hint))"
    }

    /// The DNS names and IP addresses the certificate is valid for.
    static func subjectNames(_ certificate: Certificate) -> [String] {
        guard let alternatives = try? certificate.extensions.subjectAlternativeNames else { return [] }
        return alternatives.compactMap { name in
            switch name {
            case .dnsName(let dns): return dns
            case .ipAddress(let address):
                let bytes = Array(address.bytes)
                if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
                if bytes.count == 16 {
                    return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                        .joined(separator: ":")
                }
                return nil
            default: return nil
            }
        }
    }

    /// RFC 6125 matching, as far as the message needs it: exact (case-insensitive) or a leftmost `*.` label.
    static func matches(_ name: String, host: String) -> Bool {
        let name = name.lowercased(), host = host.lowercased()
        if name == host { return true }
        guard name.hasPrefix("*."), let dot = host.firstIndex(of: ".") else { return false }
        return host[dot...] == name.dropFirst()
    }

    /// The leaf certificate `host:port` presents, taken without verifying it (5 s at most).
    private static func peerCertificate(host: String, port: Int) async -> Certificate? {
        // Taken in a verification callback that accepts anything: a server that then refuses the
        // handshake (it wants a client certificate) has shown its certificate by that point.
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .noHostnameVerification
        guard let context = try? NIOSSLContext(configuration: configuration) else { return nil }
        let isAddress = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = OncePromise(group.any().makePromise(of: NIOSSLCertificate?.self))
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: context, serverHostname: isAddress ? nil : host) { chain, verified in
                        promise.succeed(chain.first)
                        verified.succeed(.certificateVerified)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                    try channel.pipeline.syncOperations.addHandler(PeerCertificateCatcher(promise: promise))
                }
            }
        do {
            let channel = try await bootstrap.connect(host: host, port: port).get()
            let timeout = channel.eventLoop.scheduleTask(in: .seconds(5)) { promise.fail(ChannelError.connectTimeout(.seconds(5))) }
            defer {
                timeout.cancel()
                channel.close(promise: nil)
            }
            guard let leaf = try await promise.future.get() else { return nil }
            return try Certificate(derEncoded: leaf.toDERBytes())
        } catch {
            promise.fail(error)
            return nil
        }
    }
}

/// A promise completed by whichever comes first: the handshake, an error, the close, the timeout.
private final class OncePromise: Sendable {
    private let promise: EventLoopPromise<NIOSSLCertificate?>
    private let done = LockedBox(false)

    init(_ promise: EventLoopPromise<NIOSSLCertificate?>) {
        self.promise = promise
    }

    var future: EventLoopFuture<NIOSSLCertificate?> { promise.futureResult }

    func succeed(_ value: NIOSSLCertificate?) {
        if first() { promise.succeed(value) }
    }

    func fail(_ error: Error) {
        if first() { promise.fail(error) }
    }

    private func first() -> Bool {
        done.withLock { done in
            defer { done = true }
            return !done
        }
    }
}

/// Completes its promise with the peer's certificate once the handshake is done.
private final class PeerCertificateCatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny
    let promise: OncePromise

    init(promise: OncePromise) {
        self.promise = promise
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            promise.succeed(try? context.pipeline.syncOperations.nioSSL_peerCertificate())
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }
}
