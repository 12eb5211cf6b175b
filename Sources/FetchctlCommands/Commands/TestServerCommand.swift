import ArgumentParser
import FetchKit
import FetchKitTesting
import Foundation

/// A hidden command for benchmarks, examples and manual testing: serves FetchKitTesting's endpoints
/// on 127.0.0.1 until interrupted, printing the base URL first. With `--tls DIR` it speaks HTTPS
/// (HTTP/2 and HTTP/1.1) with a private CA made for the run, whose files it writes into DIR
/// (`ca.pem`, `client.pem`, `client.key`), and prints the server key's pin on the second line.
/// `--proxy` adds a forward proxy (FetchKitTesting's `TestProxy`) and prints its URL last.
struct TestServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-server",
        abstract: "Serve the built-in test endpoints on 127.0.0.1 until SIGINT/SIGTERM (for benchmarks).",
        shouldDisplay: false
    )

    @Option(help: "The port (0 picks a free one).")
    var port = 0

    @Option(help: "Serve HTTPS with a private CA written into this directory (ca.pem, client.pem, client.key).")
    var tls: String?

    @Flag(help: "With --tls: require a client certificate issued by the directory's client CA.")
    var requireClientCert = false

    @Flag(help: "Also start a forward proxy (CONNECT tunnels, absolute-form forwarding) on 127.0.0.1 and print its URL last.")
    var proxy = false

    func run() async throws {
        let certificates = try tls.map { try TestCertificates.make(in: $0) }
        let server = try await TestServer.start(port: port, tls: certificates.map { .init($0, requireClientCertificate: requireClientCert) })
        let stdout = LogWriter.standardOutput
        stdout.write(server.baseURL + "\n")
        if let certificates { stdout.write(certificates.serverPin + "\n") }
        let tunnel = proxy ? try await TestProxy.start() : nil
        if let tunnel { stdout.write(tunnel.url + "\n") }
        stdout.flush()
        let stopped = LockedSignal()
        let trap = SignalTrap { _ in stopped.fire() }
        await stopped.wait()
        _ = trap
        try await tunnel?.shutdown()
        try await server.shutdown()
    }
}

/// Fires once; `wait` returns after it has.
final class LockedSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var fired = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func fire() {
        let toResume = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            fired = true
            defer { waiters = [] }
            return waiters
        }
        for waiter in toResume { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = lock.withLock { () -> Bool in
                if fired { return true }
                waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
