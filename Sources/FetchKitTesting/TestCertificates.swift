import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

public enum TestCertificatesError: Error {
    /// `openssl` could not encrypt the client key (is Debian's openssl installed?).
    case openssl
}

/// A private PKI made at test time (no key material is committed): a server CA and the server
/// certificates `TestServer` can present, a client CA and a client certificate, written as PEM
/// files into a directory for `tls.ca_file`, `tls.client_cert` and `tls.client_key`.
///
/// Server certificates, all issued by the server CA unless said otherwise:
/// - `valid`: for `localhost` and `127.0.0.1`, valid for a month;
/// - `expired`: the same names, expired yesterday;
/// - `wrongHost`: for `wrong.example` only (no IP address: NIOSSL matches an IP SAN against the
///   address it connected to, so 127.0.0.1 must be absent for the name check to fail);
/// - a server without `tls.ca_file` sees any of them as issued by an unknown CA.
public struct TestCertificates: Sendable {
    /// Which certificate the server presents.
    public enum ServerIdentity: Sendable {
        case valid, expired, wrongHost
    }

    public let directory: String
    /// The server CA (PEM): what `tls.ca_file` names to trust the test server.
    public let caFile: String
    /// The client CA (PEM) the server requires client certificates from, and a client certificate
    /// and its unencrypted PKCS#8 key issued by it.
    public let clientCAFile: String
    public let clientCertFile: String
    public let clientKeyFile: String
    /// `sha256/<base64>` of the valid server certificate's SubjectPublicKeyInfo, as `tls.pins` takes it.
    public let serverPin: String
    /// The same key pinned curl's way: `sha256//<base64>`.
    public var serverPinCurlStyle: String { "sha256//" + serverPin.dropFirst("sha256/".count) }

    let server: [ServerIdentity: Issued]
    let clientCA: Issued

    struct Issued: @unchecked Sendable {  // Certificate and P256 keys are immutable values
        let certificate: Certificate
        let key: P256.Signing.PrivateKey

        var certificatePEM: String { get throws { try certificate.serializeAsPEM().pemString } }
        var nioCertificate: NIOSSLCertificate { get throws { try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem) } }
        var nioKey: NIOSSLPrivateKey { get throws { try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem) } }
    }

    /// Makes the whole PKI and writes the PEM files into a new temporary directory (removed at exit).
    public static func make() throws -> TestCertificates {
        try TestCertificates(directory: TemporaryDirectory.make(prefix: "fetchctl-tests-pki"))
    }

    /// Makes the whole PKI and writes the PEM files into `directory` (created if needed, kept).
    public static func make(in directory: String) throws -> TestCertificates {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try TestCertificates(directory: directory)
    }

    init(directory: String) throws {
        self.directory = directory
        let serverCA = try Self.makeCA("fetchctl test server CA")
        let clientCA = try Self.makeCA("fetchctl test client CA")
        let localhost: [GeneralName] = [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))]
        let day: TimeInterval = 86_400
        server = [
            .valid: try Self.issue(from: serverCA, commonName: "localhost", names: localhost, usage: .serverAuth),
            .expired: try Self.issue(from: serverCA, commonName: "localhost", names: localhost, usage: .serverAuth,
                                     from: Date().addingTimeInterval(-30 * day), until: Date().addingTimeInterval(-day)),
            .wrongHost: try Self.issue(from: serverCA, commonName: "wrong.example", names: [.dnsName("wrong.example")], usage: .serverAuth),
        ]
        self.clientCA = clientCA
        let client = try Self.issue(from: clientCA, commonName: "fetchctl test client", names: [], usage: .clientAuth)

        caFile = directory + "/ca.pem"
        clientCAFile = directory + "/client-ca.pem"
        clientCertFile = directory + "/client.pem"
        clientKeyFile = directory + "/client.key"
        try serverCA.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        try clientCA.certificatePEM.write(toFile: clientCAFile, atomically: true, encoding: .utf8)
        try client.certificatePEM.write(toFile: clientCertFile, atomically: true, encoding: .utf8)
        try client.key.pemRepresentation.write(toFile: clientKeyFile, atomically: true, encoding: .utf8)
        // The SPKI is what the key's DER representation is (SubjectPublicKeyInfo).
        let spki = server[.valid]!.key.publicKey.derRepresentation
        serverPin = "sha256/" + Data(SHA256.hash(data: spki)).base64EncodedString()
    }

    /// The client key encrypted with `passphrase` (PKCS#8, AES-256-CBC: what `openssl pkcs8 -topk8`
    /// writes; swift-crypto writes no encrypted keys), written beside the others; its path.
    public func encryptedClientKey(passphrase: String) async throws -> String {
        let path = directory + "/client-\(UUID().uuidString.prefix(8)).enc.key"
        let made = try await ProcessLauncher.succeeds("/usr/bin/openssl", ["pkcs8", "-topk8", "-in", clientKeyFile, "-out", path,
                                                                     "-v2", "aes-256-cbc", "-passout", "pass:" + passphrase])
        guard made else { throw TestCertificatesError.openssl }
        return path
    }

    /// The server's TLS configuration: `identity`'s certificate, HTTP/2 and HTTP/1.1 offered by ALPN,
    /// and client certificates from the client CA required when `requireClientCertificate`.
    func serverConfiguration(_ identity: ServerIdentity, requireClientCertificate: Bool) throws -> TLSConfiguration {
        let issued = server[identity]!
        var configuration: TLSConfiguration
        if requireClientCertificate {
            configuration = .makeServerConfigurationWithMTLS(certificateChain: [.certificate(try issued.nioCertificate)],
                                                             privateKey: .privateKey(try issued.nioKey),
                                                             trustRoots: .certificates([try clientCA.nioCertificate]))
            // TLS 1.3 reports a refused client certificate after the handshake, as a closed connection;
            // 1.2 refuses it in the handshake, which is what a test can check.
            configuration.maximumTLSVersion = .tlsv12
        } else {
            configuration = .makeServerConfiguration(certificateChain: [.certificate(try issued.nioCertificate)],
                                                     privateKey: .privateKey(try issued.nioKey))
        }
        configuration.applicationProtocols = ["h2", "http/1.1"]
        return configuration
    }

    private static func makeCA(_ name: String) throws -> Issued {
        let key = P256.Signing.PrivateKey()
        let certificateKey = Certificate.PrivateKey(key)
        let subject = try DistinguishedName { CommonName(name) }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: certificateKey.publicKey,
            notValidBefore: Date().addingTimeInterval(-3600), notValidAfter: Date().addingTimeInterval(30 * 86_400),
            issuer: subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: certificateKey.publicKey)
            },
            issuerPrivateKey: certificateKey)
        return Issued(certificate: certificate, key: key)
    }

    private static func issue(from issuer: Issued, commonName: String, names: [GeneralName], usage: ExtendedKeyUsage.Usage,
                              from start: Date = Date().addingTimeInterval(-3600),
                              until end: Date = Date().addingTimeInterval(30 * 86_400)) throws -> Issued {
        let key = P256.Signing.PrivateKey()
        let certificateKey = Certificate.PrivateKey(key)
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: certificateKey.publicKey,
            notValidBefore: start, notValidAfter: end,
            issuer: issuer.certificate.subject, subject: try DistinguishedName { CommonName(commonName) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([usage])
                if !names.isEmpty {
                    SubjectAlternativeNames(names)
                }
            },
            issuerPrivateKey: Certificate.PrivateKey(issuer.key))
        return Issued(certificate: certificate, key: key)
    }
}
