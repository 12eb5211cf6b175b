import GRDB

/// A store's SQLite connections (the state store's, the response cache index's): one writer and,
/// opened on the first read, one read-only reader, both in WAL mode, so that a read sees what was
/// committed and never waits for a write, as with GRDB's `DatabasePool`.
///
/// Not a `DatabasePool` because of what its opening costs: it makes sure the WAL file is not
/// empty, asking Foundation for the file's size (`URL.resourceValues`, which reads every attribute
/// of the file, the owner's and group's names included: an NSS lookup, `/etc/passwd` and
/// `/etc/group` read) and then creating and dropping a table, since SQLite removes the WAL when a
/// store closes. For two stores that was 3.4 of the 25 million instructions of a one-job run. The
/// non-empty WAL file is for GRDB's snapshots (which nothing here uses) and for readers opened
/// before any writer (here the writer opens first). The writer sets WAL mode itself
/// (`PRAGMA journal_mode = WAL`: a store made from its template is in WAL mode already, and one
/// made by an older fetchctl was made by a pool, also in WAL mode).
final class StoreConnections: Sendable {
    let path: String
    let writer: DatabaseQueue
    private let readerConfiguration: Configuration
    private let opened = LockedBox<DatabaseQueue?>(nil)

    /// Opens the writer with `configuration` (whose `prepareDatabase` runs on each connection);
    /// the reader takes the same, read-only.
    init(path: String, configuration: Configuration) throws {
        self.path = path
        var writing = configuration
        // Read-only (`cache stats`, `--dry-run`): the one connection reads, in the store's own mode.
        if !configuration.readonly { writing.prepareDatabase { db in try db.execute(sql: "PRAGMA journal_mode = WAL") } }
        writer = try DatabaseQueue(path: path, configuration: writing)
        var reading = configuration
        reading.readonly = true
        reading.allowsUnsafeTransactions = false
        readerConfiguration = reading
    }

    /// The reader, opened now if it is the first read; a read-only store's one connection.
    func reader() throws -> DatabaseQueue {
        if writer.configuration.readonly { return writer }
        return try opened.withLock { reader in
            if let reader { return reader }
            let made = try DatabaseQueue(path: path, configuration: readerConfiguration)
            reader = made
            return made
        }
    }

    func read<T>(_ value: (Database) throws -> T) throws -> T {
        try reader().read(value)
    }

    func read<T: Sendable>(_ value: @Sendable (Database) throws -> T) async throws -> T {
        try await reader().read(value)
    }

    func write<T>(_ updates: (Database) throws -> T) throws -> T {
        try writer.write(updates)
    }

    func write<T: Sendable>(_ updates: @Sendable (Database) throws -> T) async throws -> T {
        try await writer.write(updates)
    }

    func writeWithoutTransaction<T>(_ updates: (Database) throws -> T) rethrows -> T {
        try writer.writeWithoutTransaction(updates)
    }

    func writeWithoutTransaction<T: Sendable>(_ updates: @Sendable (Database) throws -> T) async throws -> T {
        try await writer.writeWithoutTransaction(updates)
    }

    func asyncWrite<T>(_ updates: @escaping @Sendable (Database) throws -> T,
                       completion: @escaping @Sendable (Database, Result<T, Error>) -> Void) {
        writer.asyncWrite(updates, completion: completion)
    }

    func asyncWriteWithoutTransaction(_ updates: @escaping @Sendable (Database) -> Void) {
        writer.asyncWriteWithoutTransaction(updates)
    }

    /// Closes the reader, if it was opened, and the writer (SQLite checkpoints and removes the WAL
    /// when the last connection closes).
    func close() throws {
        try opened.withLock { reader in
            try reader?.close()
            reader = nil
        }
        try writer.close()
    }

    /// Closes both connections as `close` does, for a process that exits next (`fetchctl run`
    /// once its summary is written), and keeps their queues to the end of the process
    /// (`ExitRetained`): all a closed `DatabaseQueue`'s deinit does then is unregister from
    /// Foundation's notification center, whose casts of `Any` made the runtime walk every
    /// conformance record of the binary, about 1.3 million instructions at the end of every run.
    /// A queue that can't be closed is left to its deinit, which closes it.
    func closeForExit() {
        // Held here while `close` lets go of it, so that its deinit does not run then.
        let reader = opened.withLock { $0 }
        guard (try? close()) != nil else { return }
        ExitRetained.keep(writer)
        if let reader { ExitRetained.keep(reader) }
    }
}

/// Objects kept until the process exits instead of torn down when their last user lets go: for
/// closed SQLite queues, whose only teardown left is work the exit makes moot (see
/// `StoreConnections.closeForExit`). Only for what a process does once, right before it exits.
enum ExitRetained {
    private static let objects = LockedBox<[any AnyObject & Sendable]>([])

    static func keep(_ object: any AnyObject & Sendable) {
        objects.withLock { $0.append(object) }
    }

    /// How many objects are kept (for tests).
    static var count: Int { objects.withLock { $0.count } }
}
