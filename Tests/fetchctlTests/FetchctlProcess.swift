import Foundation
import FetchKitTesting

/// Runs the built `fetchctl` binary, as a user or CI would.
struct FetchctlProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The repository root (for examples and schemas).
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The binary beside the test bundle (`swift test` builds every product of the package first).
    static let binary: URL = {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("fetchctl")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                return candidate
            }
            if directory.lastPathComponent.hasSuffix(".xctest") || directory.lastPathComponent == "Contents" {
                directory = directory.deletingLastPathComponent()
                continue
            }
            break
        }
        return root.appendingPathComponent(".build/debug/fetchctl")
    }()

    /// Runs `fetchctl arguments` in `directory` with exactly `environment` (plus PATH), waiting on a
    /// dispatch thread: a blocking wait on the (two-thread) cooperative pool would stall every other
    /// test running at the same time.
    static func run(_ arguments: [String], in directory: URL = root, environment: [String: String] = [:]) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Swift.Result { try runBlocking(arguments, in: directory, environment: environment) })
            }
        }
    }

    /// Waits for `process` to exit without blocking a cooperative thread.
    static func waitForExit(_ process: SpawnedProcess) async {
        await process.exited()
    }

    private static func runBlocking(_ arguments: [String], in directory: URL = root, environment: [String: String] = [:]) throws -> Result {
        let finished = try ProcessLauncher.runToEnd(binary.path, arguments, in: directory.path,
                                                    environment: environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a })
        return Result(status: finished.status, stdout: finished.stdout, stderr: finished.stderr)
    }

    /// Starts `fetchctl arguments` in `directory`, its stdout and stderr going to `stdout.txt` and
    /// `stderr.txt` there.
    static func start(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws -> SpawnedProcess {
        try ProcessLauncher.spawn(binary.path, arguments, in: directory.path,
                                  environment: environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a },
                                  stdout: directory.appendingPathComponent("stdout.txt").path,
                                  stderr: directory.appendingPathComponent("stderr.txt").path)
    }

    /// A fresh temporary directory holding `files`, removed when the test process exits.
    static func directory(with files: [String: String]) throws -> URL {
        let dir = URL(fileURLWithPath: try TemporaryDirectory.make(prefix: "fetchctl-cli"))
        for (name, text) in files { try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        return dir
    }
}

/// Data set by one thread and read by another after a `DispatchGroup` wait.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()  // guarded by lock

    func set(_ value: Data) { lock.withLock { data = value } }
    var value: Data { lock.withLock { data } }
}
