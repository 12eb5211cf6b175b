import GRDB
import NIOPosix

/// The read-only connections `SQLiteResponseCache` answers lookups through: one for each event loop
/// that asks (opened on its first lookup), and one for every other thread.
///
/// A lookup runs on the calling thread (see `SQLiteResponseCache.lookupRows`), and a connection
/// serves one thread at a time. With one connection for the whole process, the two loops of a warm
/// rerun took turns at it: of 100,000 lookups, 50,000 found the other loop inside and put their
/// thread to sleep until it left (58,000 context switches, 1.3 of the 2 cores used). A loop's own
/// connection is never contended.
///
/// Each is opened on its first lookup, the one for other threads too: a cold run, whose index is
/// empty, looks nothing up (`SQLiteResponseCache.entries`), and opening a connection costs a file
/// open and SQLite reading the schema (half a million instructions of a run's start).
final class CacheLookupConnections: Sendable {
    private let path: String
    private let opened = LockedBox<DatabaseQueue?>(nil)
    private let byLoop = LockedBox([ObjectIdentifier: DatabaseQueue]())

    init(path: String) {
        self.path = path
    }

    /// The connection for threads other than the event loops (and for a loop whose own can't be
    /// opened), opened now if this is its first lookup.
    private func shared() throws -> DatabaseQueue {
        try opened.withLock { queue in
            if let queue { return queue }
            let made = try SQLiteResponseCache.openLookups(path)
            queue = made
            return made
        }
    }

    /// The connection for the calling thread.
    func connection() throws -> DatabaseQueue {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else { return try shared() }
        let key = ObjectIdentifier(loop as AnyObject)
        if let queue = byLoop.withLock({ $0[key] }) { return queue }
        // Opened outside the lock (a file open and a pragma): a loop is one thread, so no other
        // thread opens this loop's connection meanwhile. One that can't be opened leaves the loop
        // on the shared connection. 4 MiB of pages each, as the loops' connections hold the same
        // pages: the rerun of a finished million-job batch (every job a lookup) peaked at 168 MB
        // with one 32 MiB connection, 153 MB with two of 8 and 144 MB with two of 4 (bench/scale.sh;
        // the bound is 150), in 26, 21 and 21 s; at 100,000 jobs 4 MiB is as fast as 16.
        guard let queue = try? SQLiteResponseCache.openLookups(path, cacheMiB: 4) else { return try shared() }
        byLoop.withLock { $0[key] = queue }
        return queue
    }

    /// Closes every lookup connection opened and keeps it to the process's end
    /// (`StoreConnections.closeForExit`).
    func closeForExit() {
        let queues = (opened.withLock { $0 }.map { [$0] } ?? []) + byLoop.withLock { Array($0.values) }
        for queue in queues where (try? queue.close()) != nil { ExitRetained.keep(queue) }
    }

    /// Runs `body` on the calling thread's connection (see `DatabaseQueue.unsafeRead`).
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try connection().unsafeRead(body)
    }
}
