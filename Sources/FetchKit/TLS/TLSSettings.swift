import Foundation
import NIOSSL

/// What a `tls` block turns into for the transport, built once per distinct block and kept: the
/// client's TLS configuration (trust roots, client certificate) and the public-key pins. Files are
/// read and keys decrypted when a block is first used, not per request; a file that can't be used
/// fails that block's requests with a `tls` error naming the file, and nothing is sent.
final class TLSSettings: Sendable {
    struct Resolved: Sendable {
        /// nil: the client's own (the system's trust store, verified, no client certificate).
        var configuration: TLSConfiguration?
        var pins: PublicKeyPins?
    }

    private let resolved = LockedBox([TLSOptions: Result<Resolved, FetchError>]())

    func resolve(_ options: TLSOptions, url: String) throws -> Resolved {
        if options.isDefault { return Resolved() }
        let result = resolved.withLock { cache in
            if let known = cache[options] { return known }
            let result = Result { try Self.build(options) }.mapError { $0 as? FetchError ?? FetchError(.tls, "\($0)") }
            cache[options] = result
            return result
        }
        return try result.get(locatedAt: url)
    }

    private static func build(_ options: TLSOptions) throws -> Resolved {
        var out = Resolved()
        if let pins = options.pins, !pins.isEmpty {
            guard let parsed = PublicKeyPins(pins) else { throw FetchError(.tls, "tls.pins holds an invalid pin; the request was not sent") }
            out.pins = parsed
        }
        guard options.caFile != nil || options.clientCert != nil || options.insecure == true else { return out }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = Self.systemTrustRoots
        if let caFile = options.caFile {
            let certificates = try certificates(caFile, key: "tls.ca_file")
            if options.caMode == .replace {
                configuration.trustRoots = .certificates(certificates)
            } else {
                configuration.additionalTrustRoots = [.certificates(certificates)]
            }
        }
        if let certificate = options.clientCert, let key = options.clientKey {
            configuration.certificateChain = try certificates(certificate, key: "tls.client_cert").map { .certificate($0) }
            configuration.privateKey = .privateKey(try privateKey(key, passphrase: options.clientKeyPassphrase))
        }
        if options.insecure == true { configuration.certificateVerification = .none }
        // Built once here to find a key that doesn't match its certificate before any connection.
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw FetchError(.tls, "tls.client_cert and tls.client_key do not go together (\(error)); the request was not sent")
        }
        out.configuration = configuration
        return out
    }

    /// The system's trust store, read as it is needed: the hashed directory (`<subject hash>.0`
    /// links, which ca-certificates keeps in `/etc/ssl/certs` on Debian, Ubuntu, Arch and Alpine),
    /// where the TLS library opens only the certificates a handshake asks for. NIOSSL's default
    /// (`.default`) parses the whole bundle file as well, about 140 certificates, each time a TLS
    /// context is made: 7.5 ms of a one-job HTTPS run's 31. Where no such directory exists, the
    /// default.
    static let systemTrustRoots: NIOSSLTrustRoots = systemTrustRoots(directory: "/etc/ssl/certs")

    static func systemTrustRoots(directory: String) -> NIOSSLTrustRoots {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory),
              names.contains(where: isHashLink) else { return .default }
        return .file(directory)
    }

    /// `<8 hex digits>.<n>`: how OpenSSL's `c_rehash` (and BoringSSL's lookup) names a certificate.
    private static func isHashLink(_ name: String) -> Bool {
        let parts = name.split(separator: ".")
        return parts.count == 2 && parts[0].count == 8 && parts[0].allSatisfy(\.isHexDigit) && !parts[1].isEmpty && parts[1].allSatisfy(\.isNumber)
    }

    private static func certificates(_ path: String, key: String) throws -> [NIOSSLCertificate] {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw FetchError(.tls, "\(key) '\(path)' cannot be read; the request was not sent")
        }
        guard let certificates = try? NIOSSLCertificate.fromPEMFile(path), !certificates.isEmpty else {
            throw FetchError(.tls, "\(key) '\(path)' holds no PEM certificate; the request was not sent")
        }
        return certificates
    }

    private static func privateKey(_ path: String, passphrase: String?) throws -> NIOSSLPrivateKey {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw FetchError(.tls, "tls.client_key '\(path)' cannot be read; the request was not sent")
        }
        do {
            if let passphrase {
                return try NIOSSLPrivateKey(file: path, format: .pem) { (setter: NIOSSLPassphraseSetter<[UInt8]>) in
                    setter(Array(passphrase.utf8))
                }
            }
            return try NIOSSLPrivateKey(file: path, format: .pem)
        } catch {
            // Never the passphrase itself.
            let why = passphrase == nil ? "not a PEM private key, or encrypted (set tls.client_key_passphrase)" : "not a PEM private key, or the passphrase is wrong"
            throw FetchError(.tls, "tls.client_key '\(path)' cannot be used: \(why); the request was not sent")
        }
    }
}
