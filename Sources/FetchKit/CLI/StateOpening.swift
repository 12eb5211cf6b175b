import Foundation
import NIOCore

/// A run's state directory being opened: its lock (one run at a time), and the state store and the
/// response cache, each opening on a thread of its own (SQLite files, their migrations, pragmas:
/// about 3 ms each), so the first request waits for the slower of the two, not for both in turn.
///
/// `fetchctl run` starts this as soon as the jobs file's settings are read, while its jobs are
/// expanded and checked (3 ms of a 2,000-job matrix, 20 of a 20,000-job one), when the state
/// directory already exists: a jobs file that turns out to be invalid then leaves nothing behind
/// that was not there. The run takes it if its directories are the ones it needs; otherwise it is
/// dropped, and so are the lock and the stores.
final class StateOpening: Sendable {
    let stateDirectory: String
    let cacheDirectory: String
    /// The lock, or why it could not be taken (`RunLock.Held`: another run holds it).
    let lock: Result<RunLock, Error>
    let store: EventLoopFuture<StateStore>?
    let cache: EventLoopFuture<SQLiteResponseCache>?
    /// The run's redactor, for the URLs the cache writes; set once the config is loaded, before any
    /// request (until then there is nothing to store).
    let redactor = LockedBox(Redactor())
    /// The cache's problems, held until the run has started (`CacheProblemRelay`).
    let problems = CacheProblemRelay()

    init(stateDirectory: String, cacheDirectory: String) {
        self.stateDirectory = stateDirectory
        self.cacheDirectory = cacheDirectory
        lock = Result { try RunLock(directory: stateDirectory) }
        guard case .success = lock else {
            store = nil
            cache = nil
            return
        }
        store = RunInvocation.onAnotherThread { try StateStore(directory: stateDirectory) }
        cache = RunInvocation.onAnotherThread { [redactor, problems] in
            try SQLiteResponseCache(directory: cacheDirectory, batchesStores: true, redact: { redactor.withLock { $0 }.redact($0) },
                                    onProblem: { problems.report($0) })
        }
    }

    var isLocked: Bool {
        if case .success = lock { return true }
        return false
    }

    /// Opens `stateDirectory` early if it exists already; nil otherwise.
    static func early(stateDirectory: String, cacheDirectory: String) -> StateOpening? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: stateDirectory, isDirectory: &isDirectory), isDirectory.boolValue else { return nil }
        return StateOpening(stateDirectory: stateDirectory, cacheDirectory: cacheDirectory)
    }
}
