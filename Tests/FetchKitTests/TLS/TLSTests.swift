import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// HTTPS against the test server's private CA: trust (`ca_file`, both modes), the reasons a
/// certificate is refused, public-key pins over HTTP/1.1 and HTTP/2, client certificates, and the
/// HTTP version negotiated. Each through both clients, over HTTP/2 (negotiated by ALPN) and HTTP/1.1.
@Suite struct TLSTests {
    static let certificates = Result { try TestCertificates.make() }

    /// A client and the HTTP versions it is told to offer.
    struct Path: Sendable, CustomTestStringConvertible {
        var client: Session.HTTPClientKind
        var version: AsyncHTTPClientTransport.HTTPVersion
        var testDescription: String { "\(client.rawValue), http_version \(version.rawValue)" }
    }

    /// Every way an HTTPS request can go: either client, negotiating HTTP/2 or held to HTTP/1.1.
    static let paths = Session.HTTPClientKind.allCases.flatMap { client in
        AsyncHTTPClientTransport.HTTPVersion.allCases.map { Path(client: client, version: $0) }
    }

    func withServer(identity: TestCertificates.ServerIdentity = .valid, requireClientCertificate: Bool = false,
                    client: Session.HTTPClientKind = .fetchKit, httpVersion: AsyncHTTPClientTransport.HTTPVersion = .auto,
                    monitors: [any EventMonitor] = [],
                    _ body: (TestServer, Session, TestCertificates) async throws -> Void) async throws {
        let certificates = try Self.certificates.get()
        let server = try await TestServer.start(tls: .init(certificates, identity: identity, requireClientCertificate: requireClientCertificate))
        var configuration = Session.Configuration(httpVersion: httpVersion)
        configuration.client = client
        let session = Session(configuration: configuration, eventMonitors: monitors)
        var failure: Error?
        do { try await body(server, session, certificates) } catch { failure = error }
        if client == .fetchKit {
            // Served by FetchKit's own client over TLS, not handed to AsyncHTTPClient.
            #expect((session.transport as? NIOTransport)?.hasUsedFallback == false)
        }
        try await session.shutdown()
        try await server.shutdown()
        if let failure { throw failure }
    }

    func fetchError(_ body: () async throws -> Void) async -> FetchError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? FetchError
        }
    }

    @Test(arguments: paths)
    func aPrivateCAIsUnknownWithoutCAFileAndTheMessageSaysWhich(path: Path) async throws {
        try await withServer(client: path.client, httpVersion: path.version) { server, session, _ in
            let error = await fetchError { _ = try await session.data(server.baseURL + "/echo") }
            #expect(error?.code == .tls)
            let message = error?.message ?? ""
            #expect(message.contains("certificate 'CN=localhost' issued by 'CN=fetchctl test server CA'"), "\(message)")
            #expect(message.contains("unknown issuer"), "\(message)")
            #expect(message.contains("tls.ca_file"), "\(message)")
            #expect(server.state.requests.isEmpty)
        }
    }

    @Test(arguments: [TLSOptions.CAMode.add, .replace], paths)
    func caFileTrustsThePrivateCA(mode: TLSOptions.CAMode, path: Path) async throws {
        let recorder = VersionRecorder()
        try await withServer(client: path.client, httpVersion: path.version, monitors: [recorder]) { server, session, certificates in
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile, caMode: mode))
            let response = try await session.data(server.baseURL + "/echo", options: options)
            #expect(response.response.head.status == 200)
            // HTTP/2 negotiated by ALPN where offered, as the server saw it and as request.finished reports it.
            #expect(server.state.requests.map(\.httpVersion) == [path.version == .auto ? "HTTP/2" : "HTTP/1.1"])
            #expect(recorder.versions == [path.version == .auto ? "2" : "1.1"])
        }
    }

    @Test(arguments: paths)
    func anExpiredCertificateIsRefusedAndTheMessageSaysWhen(path: Path) async throws {
        try await withServer(identity: .expired, client: path.client, httpVersion: path.version) { server, session, certificates in
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile))
            let error = await fetchError { _ = try await session.data(server.baseURL + "/echo", options: options) }
            #expect(error?.code == .tls)
            #expect(error?.message.contains("expired on") == true, "\(error?.message ?? "")")
            #expect(server.state.requests.isEmpty)
        }
    }

    @Test(arguments: paths)
    func anotherHostsCertificateIsRefusedAndTheMessageSaysForWhom(path: Path) async throws {
        try await withServer(identity: .wrongHost, client: path.client, httpVersion: path.version) { server, session, certificates in
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile))
            let error = await fetchError { _ = try await session.data(server.baseURL + "/echo", options: options) }
            #expect(error?.code == .tls)
            let message = error?.message ?? ""
            #expect(message.contains("valid for wrong.example, not for 127.0.0.1 (wrong host)"), "\(message)")
            #expect(server.state.requests.isEmpty)
        }
    }

    /// A digest whose base64 starts with '/' (one key in 64) is not mistaken for curl's `sha256//`.
    @Test func aDigestStartingWithASlashIsReadAsItIs() throws {
        let encoded = Data([0xFC] + Array(repeating: 0x01, count: 31)).base64EncodedString()
        #expect(encoded.hasPrefix("/"))
        #expect(PublicKeyPins.normalized("sha256/" + encoded) == "sha256/" + encoded)
        #expect(PublicKeyPins.normalized("sha256//" + encoded) == "sha256/" + encoded, "curl's spelling of the same digest")
        #expect(PublicKeyPins(["sha256/" + encoded]) != nil)
        #expect(PublicKeyPins.normalized("sha256/" + String(encoded.dropFirst())) == nil)
    }

    /// Pins in both spellings, over both protocols: the matching key is accepted.
    @Test(arguments: paths, [false, true])
    func aPinnedKeyIsAccepted(path: Path, curlStyle: Bool) async throws {
        try await withServer(client: path.client, httpVersion: path.version) { server, session, certificates in
            let pin = curlStyle ? certificates.serverPinCurlStyle : certificates.serverPin
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile, pins: [pin]))
            let response = try await session.data(server.baseURL + "/echo", options: options)
            #expect(response.response.head.status == 200)
            #expect(server.state.requests.map(\.httpVersion) == [path.version == .auto ? "HTTP/2" : "HTTP/1.1"])
        }
    }

    /// Another key: refused after the handshake, before a request byte; never retried.
    @Test(arguments: paths)
    func aKeyMatchingNoPinIsRefusedBeforeAnyRequest(path: Path) async throws {
        let recorder = EventRecorder()
        try await withServer(client: path.client, httpVersion: path.version, monitors: [recorder]) { server, session, certificates in
            let other = PublicKeyPins.pin(spki: Array("not the server's key".utf8))
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile, pins: [other]), retryPolicy: .fast(limit: 3))
            let error = await fetchError { _ = try await session.data(server.baseURL + "/echo", options: options) }
            #expect(error?.code == .tlsPinMismatch)
            #expect(error?.message.contains("it presented \(certificates.serverPin)") == true, "\(error?.message ?? "")")
            #expect(server.state.requests.isEmpty, "the server saw no request")
            #expect(server.state.connectionsAccepted == 1, "one handshake, no retry")
            #expect(recorder.events("request.retrying").isEmpty)
        }
    }

    @Test(arguments: paths)
    func aServerThatRequiresAClientCertificateRefusesAnAnonymousClient(path: Path) async throws {
        try await withServer(requireClientCertificate: true, client: path.client, httpVersion: path.version) { server, session, certificates in
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile), retryPolicy: nil)
            let error = await fetchError { _ = try await session.data(server.baseURL + "/echo", options: options) }
            #expect(error?.code == .tls)
            #expect(error?.message.contains("client certificate") == true, "\(error?.message ?? "")")
            #expect(server.state.requests.isEmpty)
        }
    }

    @Test(arguments: paths)
    func aClientCertificateIsPresented(path: Path) async throws {
        try await withServer(requireClientCertificate: true, client: path.client, httpVersion: path.version) { server, session, certificates in
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile, clientCert: certificates.clientCertFile,
                                                         clientKey: certificates.clientKeyFile))
            let response = try await session.data(server.baseURL + "/echo", options: options)
            #expect(response.response.head.status == 200)
            #expect(server.state.requests.map(\.clientCertificate) == ["CN=fetchctl test client"])
        }
    }

    /// An encrypted key (PKCS#8, AES-256, made by the openssl command line) with its passphrase; a
    /// wrong passphrase fails with a message that never shows it.
    @Test(arguments: paths)
    func anEncryptedClientKeyNeedsItsPassphrase(path: Path) async throws {
        try await withServer(requireClientCertificate: true, client: path.client, httpVersion: path.version) { server, session, certificates in
            let encrypted = try await certificates.encryptedClientKey(passphrase: "correct-horse-7")
            func options(_ passphrase: String?) -> RequestOptions {
                RequestOptions(tls: TLSOptions(caFile: certificates.caFile, clientCert: certificates.clientCertFile, clientKey: encrypted,
                                               clientKeyPassphrase: passphrase), retryPolicy: nil)
            }
            let response = try await session.data(server.baseURL + "/echo", options: options("correct-horse-7"))
            #expect(response.response.head.status == 200)
            let wrong = await fetchError { _ = try await session.data(server.baseURL + "/echo", options: options("battery-staple-9")) }
            #expect(wrong?.code == .tls)
            #expect(wrong?.message.contains("passphrase is wrong") == true, "\(wrong?.message ?? "")")
            #expect(wrong?.message.contains("battery-staple-9") == false)
            let missing = await fetchError { _ = try await session.data(server.baseURL + "/echo", options: options(nil)) }
            #expect(missing?.code == .tls)
            #expect(missing?.message.contains("client_key_passphrase") == true, "\(missing?.message ?? "")")
            #expect(server.state.requests.count == 1)
        }
    }

    /// HTTP/2 multiplexes a host's requests on one connection: 40 requests, one TLS handshake.
    @Test(arguments: Session.HTTPClientKind.allCases)
    func http2SharesOneConnection(client: Session.HTTPClientKind) async throws {
        try await withServer(client: client) { server, session, certificates in
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<40 { group.addTask { _ = try await session.data(server.baseURL + "/delay/20?i=\(i)", options: options) } }
                try await group.waitForAll()
            }
            #expect(server.state.requests.count == 40)
            #expect(Set(server.state.requests.map(\.httpVersion)) == ["HTTP/2"])
            #expect(server.state.connectionsAccepted == 1)
        }
    }

    /// Streams of one HTTP/2 connection share FetchKit's deadline timer: a stream with a short read
    /// timeout that stalls fails on time while another, with a long one, that stalls for less goes on
    /// to the end; the timer the first stream set (for later) is brought forward by the second.
    @Test(arguments: Session.HTTPClientKind.allCases)
    func http2StreamsKeepTheirOwnDeadlines(client: Session.HTTPClientKind) async throws {
        try await withServer(client: client) { server, session, certificates in
            let tls = TLSOptions(caFile: certificates.caFile)
            let long = RequestOptions(timeouts: TransportTimeouts(connect: .seconds(5), read: .seconds(10), total: nil), tls: tls, retryPolicy: nil)
            let short = RequestOptions(timeouts: TransportTimeouts(connect: .seconds(5), read: .milliseconds(300), total: nil), tls: tls, retryPolicy: nil)
            // The connection first, so that both streams share it.
            _ = try await session.data(server.baseURL + "/bytes/10", options: long)
            async let slow = session.data(server.baseURL + "/bytes/100000?stall_after=50000&stall_ms=800", options: long)
            try await Task.sleep(for: .milliseconds(50))
            let started = ContinuousClock.now
            let error = await fetchError { _ = try await session.data(server.baseURL + "/bytes/200000?stall_after=70000&stall_ms=30000", options: short) }
            #expect(error?.code == .timeout)
            #expect(ContinuousClock.now - started < .seconds(20), "cut by the read timeout, not after the 30 s stall")
            #expect(try await slow.data.count == 100_000)
            #expect(Set(server.state.requests.map(\.httpVersion)) == ["HTTP/2"])
            #expect(server.state.connectionsAccepted == 1)
        }
    }

    /// A body goes up over either protocol and either client, to a host name (SNI, and the
    /// certificate checked against the name rather than the address).
    @Test(arguments: paths)
    func aRequestBodyGoesUpToAHostName(path: Path) async throws {
        try await withServer(client: path.client, httpVersion: path.version) { server, session, certificates in
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile))
            let body = Data(#"{"title":"naïve café","n":42}"#.utf8)
            let request = BuiltRequest(method: .post, url: URL(string: "https://localhost:\(server.port)/echo?q=1")!,
                                       headers: HTTPHeaders([("Content-Type", "application/json")]), body: .data(body))
            let response = try await session.data(request, options: options)
            #expect(response.response.head.status == 200)
            let echoed = try JSONSerialization.jsonObject(with: response.data) as? [String: Any]
            #expect(echoed?["method"] as? String == "POST")
            #expect(echoed?["query"] as? String == "q=1")
            #expect(echoed?["body"] as? String == String(decoding: body, as: UTF8.self))
            #expect(server.state.requests.map(\.bodyBytes) == [body.count])
            #expect(server.state.requests.map(\.httpVersion) == [path.version == .auto ? "HTTP/2" : "HTTP/1.1"])
        }
    }

    /// A server that takes two streams at a time: the other requests wait for a stream on the same
    /// connection instead of failing or opening more connections.
    @Test(arguments: Session.HTTPClientKind.allCases)
    func streamsBeyondTheServersLimitWaitTheirTurn(client: Session.HTTPClientKind) async throws {
        let certificates = try Self.certificates.get()
        let server = try await TestServer.start(tls: .init(certificates, maxConcurrentStreams: 2))
        var configuration = Session.Configuration(perHost: 12)
        configuration.client = client
        let session = Session(configuration: configuration)
        var failure: Error?
        do {
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile))
            try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<12 { group.addTask { try await session.data(server.baseURL + "/delay/50?i=\(i)", options: options).response.head.status } }
                for try await status in group { #expect(status == 200) }
            }
            #expect(server.state.requests.count == 12)
            #expect(Set(server.state.requests.map(\.httpVersion)) == ["HTTP/2"])
            #expect(server.state.connectionsAccepted == 1)
            #expect(server.state.peakRequestsInFlight <= 2, "the server's limit was kept")
        } catch {
            failure = error
        }
        try await session.shutdown()
        try await server.shutdown()
        if let failure { throw failure }
    }

    /// Over either protocol and client, with tasks on either loop: a head the validator refuses
    /// fails the exchange with the validator's error and nothing of the body is kept; a body that
    /// passes arrives complete and in order.
    @Test(arguments: paths)
    func aRefusedHeadStillFailsAndAnAcceptedBodyArrivesWhole(path: Path) async throws {
        try await withServer(client: path.client, httpVersion: path.version) { server, session, certificates in
            for _ in 0..<4 {  // tasks land on either loop: both ways taken
                let sink = DataSink()
                let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile), validator: ResponseValidator(statuses: StatusSet([200...200])))
                let error = await #expect(throws: FetchError.self) { try await session.execute(server.baseURL + "/status/201", options: options, sink: sink) }
                #expect(error?.code == .status)
                #expect(error?.message == "HTTP 201 is not in 200")
                #expect(sink.data.isEmpty)
                let response = try await session.data(server.baseURL + "/bytes/40000?seed=3", options: RequestOptions(tls: TLSOptions(caFile: certificates.caFile)))
                #expect(response.data.count == 40_000)
                #expect(Array(response.data.prefix(3)) == GeneratedBytes.bytes(0..<3, seed: 3))
                #expect(Array(response.data.suffix(2)) == GeneratedBytes.bytes(39_998..<40_000, seed: 3))
            }
        }
    }

    /// A server that says GOAWAY takes no new stream on that connection: the next request goes to a
    /// new one (the old one stays open two more seconds, so a client that kept using it would fail).
    @Test(arguments: Session.HTTPClientKind.allCases)
    func afterGoAwayTheNextRequestOpensANewConnection(client: Session.HTTPClientKind) async throws {
        try await withServer(client: client) { server, session, certificates in
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile), retryPolicy: nil)
            _ = try await session.data(server.baseURL + "/echo?goaway=1", options: options)
            try await Task.sleep(for: .milliseconds(100))  // the GOAWAY frame follows the response
            let response = try await session.data(server.baseURL + "/echo?after=1", options: options)
            #expect(response.response.head.status == 200)
            #expect(server.state.requests.map(\.httpVersion) == ["HTTP/2", "HTTP/2"])
            #expect(server.state.connectionsAccepted == 2)
        }
    }

    /// A GOAWAY that names an earlier stream as the last one served: the stream after it, still in
    /// flight, was not processed (RFC 9113 §6.8) and goes again on a new connection, without the
    /// session's retry policy. No timing is assumed: the second request is sent once the server has
    /// the first, and the first is answered (then GOAWAY) only once the server has the second.
    @Test func aStreamAfterTheGoAwaysLastOneGoesAgainOnANewConnection() async throws {
        try await withServer { server, session, certificates in
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile), retryPolicy: nil)
            _ = try await session.data(server.baseURL + "/bytes/10", options: options)  // the connection first
            async let first = session.data(server.baseURL + "/delay/30000?goaway=1&until_requests=3", options: options)
            let deadline = ContinuousClock.now + .seconds(60)
            while !server.state.requests.contains(where: { $0.path.hasPrefix("/delay/30000") }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            let second = try await session.data(server.baseURL + "/delay/600?after=1", options: options)
            #expect(second.response.head.status == 200)
            #expect(try await first.response.head.status == 200)
            #expect(server.state.requests.map(\.path).filter { $0.hasPrefix("/delay/600") }.count == 2, "sent twice: refused, then on the new connection")
            #expect(server.state.connectionsAccepted == 2)
        }
    }

    /// Bodies larger than a stream's window (1 MiB) and together larger than the connection's
    /// (16 MiB) arrive whole over one HTTP/2 connection: FetchKit's client opens both windows again
    /// as it reads (a window it forgot would stall the transfer until the read timeout).
    @Test func largeBodiesOverOneHTTP2ConnectionKeepTheWindowsOpen() async throws {
        try await withServer { server, session, certificates in
            let options = RequestOptions(timeouts: TransportTimeouts(connect: .seconds(5), read: .seconds(5), total: nil),
                                         tls: TLSOptions(caFile: certificates.caFile), retryPolicy: nil)
            let size = 5_000_000
            try await withThrowingTaskGroup(of: Void.self) { group in
                for seed in 1...4 {
                    group.addTask {
                        let data = try await session.data(server.baseURL + "/bytes/\(size)?seed=\(seed)", options: options).data
                        #expect(data.count == size)
                        #expect(Array(data.suffix(3)) == GeneratedBytes.bytes(size - 3..<size, seed: seed))
                    }
                }
                try await group.waitForAll()
            }
            #expect(Set(server.state.requests.map(\.httpVersion)) == ["HTTP/2"])
            #expect(server.state.connectionsAccepted == 1)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func http1_1IsUsedWhenAskedFor(client: Session.HTTPClientKind) async throws {
        let recorder = VersionRecorder()
        try await withServer(client: client, httpVersion: .http1_1, monitors: [recorder]) { server, session, certificates in
            let options = RequestOptions(tls: TLSOptions(caFile: certificates.caFile))
            _ = try await session.data(server.baseURL + "/echo", options: options)
            #expect(server.state.requests.map(\.httpVersion) == ["HTTP/1.1"])
            #expect(recorder.versions == ["1.1"])
        }
    }
}

/// The `http_version` of every `request.finished`.
final class VersionRecorder: EventMonitor {
    private let box = LockedBox<[String]>([])
    var versions: [String] { box.withLock { $0 } }
    func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics) {
        box.withLock { $0.append(metrics.httpVersion ?? "none") }
    }
}
