import Foundation

/// Starts child processes one at a time: Foundation's `Process.run()` on Linux is not safe to call
/// from several threads at once (a test run crashed in its memcpy while one test launched
/// `openssl` and another the `fetchctl` binary). Every test that starts a process goes through here.
public enum ProcessLauncher {
    private static let launching = NSLock()

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
