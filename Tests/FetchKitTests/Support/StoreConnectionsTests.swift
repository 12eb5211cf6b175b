import Dispatch
import FetchKitTesting
import Foundation
import GRDB
import Testing
@testable import FetchKit

/// A store's connections (`StoreConnections`): a writer and a read-only reader in WAL mode.
@Suite struct StoreConnectionsTests {
    /// A read sees what is committed and doesn't wait for a transaction the writer left open (the
    /// response cache's batches leave one open between their steps).
    @Test func aReadSeesWhatIsCommittedWhileAWriteIsOpen() throws {
        let path = try TemporaryDirectory.make(prefix: "fetchctl-connections") + "/store.sqlite"
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let store = try StoreConnections(path: path, configuration: configuration)
        try store.write { db in
            try db.execute(sql: "CREATE TABLE t (n INTEGER)")
            try db.execute(sql: "INSERT INTO t (n) VALUES (1)")
        }
        try store.writeWithoutTransaction { db in
            try db.beginTransaction(.immediate)
            try db.execute(sql: "INSERT INTO t (n) VALUES (2)")
        }
        #expect(try store.read { db in try Int.fetchAll(db, sql: "SELECT n FROM t") } == [1])
        #expect(try readAsync(store) == 1)
        try store.writeWithoutTransaction { db in try db.commit() }
        #expect(try store.read { db in try Int.fetchAll(db, sql: "SELECT n FROM t ORDER BY n") } == [1, 2])
        #expect(try store.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "wal")
        #expect(throws: DatabaseError.self) { try store.read { db in try db.execute(sql: "INSERT INTO t (n) VALUES (3)") } }
        try store.close()
        // The last connection closed: SQLite checkpointed into the file and removed the WAL.
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") } == 2)
    }

    /// The reader's async `read`, from a synchronous test.
    func readAsync(_ store: StoreConnections) throws -> Int? {
        let result = LockedBox<Result<Int?, Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await Result { try await store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") } }
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0 }!.get()
    }

    /// A store made with SQL (no template) is in WAL mode too.
    @Test func aStoreMadeWithSQLIsInWALMode() throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-connections-sql")
        let store = try StateStore(directory: directory, template: nil)
        #expect(try store.pool.writer.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "wal")
    }
}
