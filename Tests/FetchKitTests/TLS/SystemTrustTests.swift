import Foundation
import FetchKitTesting
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Testing
@testable import FetchKit

/// The system's trust store is read as a hashed directory (`<subject hash>.0`, as ca-certificates
/// keeps `/etc/ssl/certs`): the TLS library opens a CA's file only when a handshake needs it.
@Suite struct SystemTrustTests {
    /// A directory of hash links is used as it is; anything else leaves NIOSSL's default.
    @Test func aHashedDirectoryIsTakenAndAnythingElseIsNot() throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-trust")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(Self.isDefault(TLSSettings.systemTrustRoots(directory: directory + "/missing")))
        try "".write(toFile: directory + "/ca-certificates.crt", atomically: true, encoding: .utf8)
        #expect(Self.isDefault(TLSSettings.systemTrustRoots(directory: directory)), "a bundle alone")
        try "".write(toFile: directory + "/1a2b3c4d.0", atomically: true, encoding: .utf8)
        #expect(TLSSettings.systemTrustRoots(directory: directory) == .file(directory))
    }

    /// A handshake finds its CA in such a directory (and fails where the directory lacks it): the
    /// lookup by subject hash is what the default trust store now relies on.
    @Test func aHandshakeFindsItsCAInTheHashedDirectory() async throws {
        let certificates = try TLSTests.certificates.get()
        let server = try await TestServer.start(tls: .init(certificates))
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-trust")
        var failure: Error?
        do {
            try "".write(toFile: directory + "/00000000.0", atomically: true, encoding: .utf8)  // a hash link, not ours
            #expect(await Self.handshake(port: server.port, trusting: directory) != nil, "the CA is not there yet")
            let hash = try Self.subjectHash(certificates.caFile)
            try FileManager.default.copyItem(atPath: certificates.caFile, toPath: directory + "/\(hash).0")
            #expect(await Self.handshake(port: server.port, trusting: directory) == nil, "found by its subject hash")
        } catch {
            failure = error
        }
        try? FileManager.default.removeItem(atPath: directory)
        try await server.shutdown()
        if let failure { throw failure }
    }

    static func isDefault(_ roots: NIOSSLTrustRoots) -> Bool {
        if case .default = roots { return true }
        return false
    }

    /// OpenSSL's subject hash of the certificate in `file` (the name `c_rehash` gives its link).
    static func subjectHash(_ file: String) throws -> String {
        let finished = try ProcessLauncher.runToEnd("/usr/bin/openssl", ["x509", "-subject_hash", "-noout", "-in", file],
                                                    in: FileManager.default.currentDirectoryPath, environment: [:])
        let hash = finished.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(hash.count == 8, "openssl printed '\(hash)', \(finished.stderr)")
        return hash
    }

    /// A TLS handshake with 127.0.0.1:`port` trusting only `directory`: nil when it succeeds, else its error.
    static func handshake(port: Int, trusting directory: String) async -> Error? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = TLSSettings.systemTrustRoots(directory: directory)
        do {
            let context = try NIOSSLContext(configuration: configuration)
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let done = loop.makePromise(of: Void.self)
            let channel = try await ClientBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
                        try channel.pipeline.syncOperations.addHandler(HandshakeWaiter(done: done))
                    }
                }
                .connect(host: "127.0.0.1", port: port).get()
            defer { channel.close(promise: nil) }
            try await done.futureResult.get()
            return nil
        } catch {
            return error
        }
    }
}

private final class HandshakeWaiter: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny
    let done: EventLoopPromise<Void>
    init(done: EventLoopPromise<Void>) { self.done = done }
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event { done.succeed(()) }
        context.fireUserInboundEventTriggered(event)
    }
    func errorCaught(context: ChannelHandlerContext, error: Error) { done.fail(error) }
    func channelInactive(context: ChannelHandlerContext) { done.fail(ChannelError.eof) }
}
