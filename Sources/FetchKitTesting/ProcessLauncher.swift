import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starts child processes one at a time, with `posix_spawn`: Foundation's `Process.run()` on Linux
/// crashed in its memcpy now and then while one test launched `openssl` and another the `fetchctl`
/// binary. Every test that starts a process goes through here.
public enum ProcessLauncher {
    static let launching = NSLock()

    /// Runs `executable` with `arguments` to its end (no input, output discarded); true when it
    /// exited 0. Waits without holding a thread of the cooperative pool, which the tests share.
    public static func succeeds(_ executable: String, _ arguments: [String]) async throws -> Bool {
        let child = try spawn(executable, arguments, in: FileManager.default.currentDirectoryPath,
                              environment: ProcessInfo.processInfo.environment)
        await child.exited()
        return child.status == 0
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

    /// Runs `executable` with `arguments` in `directory` with exactly `environment`, to its end.
    /// stdout and stderr go to files (no pipe to fill and block on), read once it exits.
    /// Blocks the calling thread: call it from a dispatch queue, not the cooperative pool.
    public static func runToEnd(_ executable: String, _ arguments: [String], in directory: String,
                                environment: [String: String]) throws -> Finished {
        let outputs = try TemporaryDirectory.make(prefix: "fetchctl-tests-child")
        defer { try? FileManager.default.removeItem(atPath: outputs) }
        let out = outputs + "/stdout", err = outputs + "/stderr"
        let child = try spawn(executable, arguments, in: directory, environment: environment, stdout: out, stderr: err)
        child.waitUntilExit()
        let read = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        return Finished(status: child.status, stdout: read(out), stderr: read(err))
    }

    /// Starts `executable` with `arguments` in `directory` with exactly `environment`, stdin from
    /// /dev/null and stdout/stderr to the files named (created or truncated), with `posix_spawn`
    /// rather than Foundation's `Process`, whose `run()` crashed in its memcpy now and then while
    /// a test process full of servers and connections started hundreds of children.
    public static func spawn(_ executable: String, _ arguments: [String], in directory: String,
                             environment: [String: String], stdout: String = "/dev/null",
                             stderr: String = "/dev/null") throws -> SpawnedProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // The working directory through the shell (glibc's addchdir is not in Swift's Glibc module);
        // `exec` keeps the shell's pid for the program.
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
        return SpawnedProcess(pid: pid)
    }
}

/// A child started by `ProcessLauncher.spawn`, named as Foundation's `Process` names the same things.
public final class SpawnedProcess: @unchecked Sendable {
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    public let processIdentifier: pid_t
    private let lock = NSLock()
    private var waitStatus: Int32?  // guarded by lock

    init(pid: pid_t) { processIdentifier = pid }

    /// Blocks until the child exits (once; later calls return at once).
    public func waitUntilExit() {
        lock.withLock {
            guard waitStatus == nil else { return }
            var status: Int32 = 0
            while waitpid(processIdentifier, &status, 0) < 0, errno == EINTR {}
            waitStatus = status
        }
    }

    /// Waits for the exit on a dispatch thread, not a thread of the cooperative pool.
    public func exited() async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                self.waitUntilExit()
                continuation.resume()
            }
        }
    }

    private var rawStatus: Int32 {
        waitUntilExit()
        return lock.withLock { waitStatus ?? 0 }
    }

    public var terminationReason: TerminationReason { rawStatus & 0x7f == 0 ? .exit : .uncaughtSignal }
    /// The exit code, or the signal's number when a signal ended it (as `Process`).
    public var terminationStatus: Int32 { terminationReason == .exit ? (rawStatus >> 8) & 0xff : rawStatus & 0x7f }
    /// The shell's convention: the exit code, or 128 + the signal.
    public var status: Int32 { terminationReason == .exit ? terminationStatus : 128 + terminationStatus }

    public func terminate() { kill(processIdentifier, SIGTERM) }
}
