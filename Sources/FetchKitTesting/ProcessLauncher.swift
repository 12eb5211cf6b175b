import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starts child processes one at a time: Foundation's `Process.run()` on Linux is not safe to call
/// from several threads at once (a test run crashed in its memcpy while one test launched
/// `openssl` and another the `fetchctl` binary). Every test that starts a process goes through here.
public enum ProcessLauncher {
    static let launching = NSLock()

    public static func run(_ process: Process) throws {
        launching.lock()
        defer { launching.unlock() }
        try process.run()
    }

    /// Runs `executable` with `arguments` to its end (no input, output discarded); true when it
    /// exited 0. Waits without holding a thread: the tests share a two-thread cooperative pool, and
    /// a thread blocked in `waitUntilExit` delays every other test's wake-ups.
    public static func succeeds(_ executable: String, _ arguments: [String]) async throws -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        return try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { finished in continuation.resume(returning: finished.terminationStatus == 0) }
            do {
                try run(process)
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
    }
}

extension ProcessLauncher {
    /// What a finished child left: its exit status (128 + the signal when a signal ended it) and
    /// everything it wrote to stdout and stderr.
    public struct Finished: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// Runs `executable` with `arguments` in `directory` with exactly `environment`, to its end,
    /// with `posix_spawn` rather than Foundation's `Process`, whose `run()` crashed in its memcpy
    /// now and then while a test process full of servers and connections started hundreds of
    /// children. stdout and stderr go to files (no pipe to fill and block on), read once it exits.
    /// Blocks the calling thread: call it from a dispatch queue, not the cooperative pool.
    public static func runToEnd(_ executable: String, _ arguments: [String], in directory: String,
                                environment: [String: String]) throws -> Finished {
        let outputs = try TemporaryDirectory.make(prefix: "fetchctl-tests-child")
        defer { try? FileManager.default.removeItem(atPath: outputs) }
        let out = outputs + "/stdout", err = outputs + "/stderr"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // The working directory through the shell (glibc's addchdir is not in Swift's Glibc module).
        let argv = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", directory, executable] + arguments
        let envp = environment.map { "\($0.key)=\($0.value)" }
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cEnvironment: [UnsafeMutablePointer<CChar>?] = envp.map { strdup($0) } + [nil]
        defer {
            for pointer in cArguments { free(pointer) }
            for pointer in cEnvironment { free(pointer) }
        }
        var pid: pid_t = 0
        let spawned = launching.withLock { posix_spawn(&pid, "/bin/sh", &actions, nil, &cArguments, &cEnvironment) }
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let exited = status & 0x7f == 0
        let code = exited ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let read = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        return Finished(status: code, stdout: read(out), stderr: read(err))
    }
}
