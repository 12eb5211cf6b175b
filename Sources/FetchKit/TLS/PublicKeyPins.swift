import Crypto
import Foundation
import NIOCore
import NIOSSL

/// Public-key pinning, after Alamofire's `PublicKeysTrustEvaluator` (which Alamofire compiles out
/// on Linux): the server's certificate must carry one of these public keys, named by the SHA-256
/// of its SubjectPublicKeyInfo (`tls.pins`: `sha256/<base64>`, or curl's `--pinnedpubkey`
/// spelling `sha256//<base64>`).
///
/// The check runs on every new connection right after the TLS handshake (and the usual chain and
/// host name verification), before any request byte is written: AsyncHTTPClient's connection
/// initializers are the hook, for HTTP/1.1 and HTTP/2 connections alike. A mismatch closes the
/// connection and fails its requests with `tls_pin_mismatch`, which is never retried: the server
/// sees the handshake and nothing else. Only the leaf certificate can be pinned (AsyncHTTPClient
/// shows no intermediates); a pin of the server's own key is what curl and HPKP users write.
public struct PublicKeyPins: Sendable, Hashable {
    /// The SHA-256 digests (32 bytes each).
    public let digests: Set<Data>

    /// nil when `pins` is empty or one of them is not a pin.
    public init?(_ pins: [String]) {
        var digests = Set<Data>()
        for pin in pins {
            guard let normalized = Self.normalized(pin), let digest = Data(base64Encoded: String(normalized.dropFirst(Self.prefix.count))) else {
                return nil
            }
            digests.insert(digest)
        }
        guard !digests.isEmpty else { return nil }
        self.digests = digests
    }

    static let prefix = "sha256/"

    /// `sha256/<base64 of 32 bytes>`, from that or curl's `sha256//<base64>`; nil for anything else.
    public static func normalized(_ pin: String) -> String? {
        guard pin.hasPrefix(prefix) else { return nil }
        // A digest's base64 may itself start with '/' (one key in 64): `sha256//abc…` is then ours,
        // not curl's spelling. The 44 characters of 32 bytes' base64 tell the two apart.
        var encoded = pin.dropFirst(prefix.count)
        if Self.digest(encoded) == nil, encoded.hasPrefix("/") { encoded = encoded.dropFirst() }
        guard Self.digest(encoded) != nil else { return nil }
        return prefix + encoded
    }

    private static func digest(_ encoded: Substring) -> Data? {
        guard let digest = Data(base64Encoded: String(encoded)), digest.count == 32 else { return nil }
        return digest
    }

    /// The pin of a public key given as SubjectPublicKeyInfo DER.
    public static func pin(spki: [UInt8]) -> String {
        prefix + Data(SHA256.hash(data: spki)).base64EncodedString()
    }

    /// The pin of `certificate`'s public key.
    public static func pin(of certificate: NIOSSLCertificate) throws -> String {
        pin(spki: try certificate.extractPublicKey().toSPKIBytes())
    }

    public func matches(_ certificate: NIOSSLCertificate) -> Bool {
        guard let spki = try? certificate.extractPublicKey().toSPKIBytes() else { return false }
        return digests.contains(Data(SHA256.hash(data: spki)))
    }

    /// The connection initializer that enforces the pins (see the type's comment). A connection
    /// without TLS (plain `http://`) has nothing to check.
    var connectionCheck: @Sendable (Channel) -> EventLoopFuture<Void> {
        { [self] channel in
            guard let handler = try? channel.pipeline.syncOperations.handler(type: NIOSSLHandler.self) else {
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            let leaf = handler.peerCertificate
            if let leaf, matches(leaf) { return channel.eventLoop.makeSucceededVoidFuture() }
            let mismatch = PinMismatch(presented: leaf.flatMap { try? Self.pin(of: $0) })
            // Closed first and failed once closed: AsyncHTTPClient must see the close while the
            // connection is still starting, or its pool later trips over a connection it forgot.
            channel.close(promise: nil)
            return channel.closeFuture.flatMapThrowing { throw mismatch }
        }
    }
}

/// The server's key matched none of `tls.pins`.
struct PinMismatch: Error, CustomStringConvertible {
    /// The pin of the key the server presented, when it presented a certificate.
    var presented: String?

    var description: String {
        "the server's public key matches none of tls.pins (it presented \(presented ?? "no certificate")); no request was sent"
    }
}
