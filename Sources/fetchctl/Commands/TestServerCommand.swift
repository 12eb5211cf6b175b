import ArgumentParser
import FetchKit
import FetchKitTesting
import Foundation

/// A hidden command for benchmarks and manual testing: serves FetchKitTesting's endpoints on
/// 127.0.0.1 until interrupted, printing the base URL first.
struct TestServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-server",
        abstract: "Serve the built-in test endpoints on 127.0.0.1 until SIGINT/SIGTERM (for benchmarks).",
        shouldDisplay: false
    )

    @Option(help: "The port (0 picks a free one).")
    var port = 0

    func run() async throws {
        let server = try await TestServer.start(port: port)
        let stdout = LogWriter.standardOutput
        stdout.write(server.baseURL + "\n")
        stdout.flush()
        let stopped = LockedSignal()
        let trap = SignalTrap { _ in stopped.fire() }
        await stopped.wait()
        _ = trap
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
