import Dispatch
import FetchKitTesting
import Foundation
import GRDB
import Testing
@testable import FetchKit

/// The stores' templates (`StoreTemplate`): each is what `SchemaCreation` writes, and a new store
/// is written from it once, whole, and never over a file that is there.
///
/// `FETCHCTL_WRITE_STORE_TEMPLATES=1 swift test --filter StoreTemplateTests` writes the templates
/// (`Sources/FetchKit/Resources/*.sqlite`) anew from `SchemaCreation` after a schema change; the
/// build then embeds them, and these tests (and the stores' schema tests) pass again.
@Suite struct StoreTemplateTests {
    static let resources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/FetchKit/Resources").path
    static let writes = ProcessInfo.processInfo.environment["FETCHCTL_WRITE_STORE_TEMPLATES"] == "1"

    /// The schema objects, the applied migrations, every table's row count and the settings a
    /// store's file carries (WAL mode in particular, so that opening it changes nothing).
    func describe(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            var lines = try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
                .map { "\($0["type"] as String) \($0["name"] as String) on \($0["tbl_name"] as String): \($0["sql"] as String? ?? "-")" }
            for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'grdb_migrations' ORDER BY name") {
                lines.append("\(table): \(try Int.fetchOne(db, sql: "SELECT count(*) FROM \"\(table)\"") ?? -1) rows")
            }
            lines.append("applied \(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier"))")
            for pragma in ["journal_mode", "page_size", "encoding", "user_version", "auto_vacuum", "application_id"] {
                lines.append("\(pragma) \(try String.fetchOne(db, sql: "PRAGMA \(pragma)") ?? "-")")
            }
            return lines
        }
    }

    /// `template` in a file of its own, to be read as a store.
    func copy(_ template: [UInt8], named name: String) throws -> String {
        let path = try TemporaryDirectory.make(prefix: "fetchctl-template") + "/" + name
        #expect(FileManager.default.createFile(atPath: path, contents: Data(template)))
        return path
    }

    /// The store SQL made at `made` (closed) against `template`: the same schema, applied
    /// migrations and settings, WAL mode, `table` empty. With `FETCHCTL_WRITE_STORE_TEMPLATES=1`
    /// the made store is first written over the resource `name`.
    func expectTemplate(_ template: [UInt8], named name: String, isWhatWasMadeAt made: String, emptyTable table: String) throws {
        if Self.writes { try Data(contentsOf: URL(fileURLWithPath: made)).write(to: URL(fileURLWithPath: Self.resources + "/" + name)) }
        let described = try describe(try copy(template, named: name))
        #expect(described == (try describe(made)), "run FETCHCTL_WRITE_STORE_TEMPLATES=1 swift test --filter StoreTemplateTests")
        #expect(described.contains("journal_mode wal"))
        #expect(described.contains("\(table): 0 rows"))
    }

    @Test func theStateStoresTemplateIsWhatSchemaCreationWrites() throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-template-state")
        let store = try StateStore(directory: directory, template: nil)
        try store.pool.close()
        try expectTemplate(PackageResources.state_sqlite, named: "state.sqlite", isWhatWasMadeAt: directory + "/state.sqlite", emptyTable: "runs")
    }

    @Test func theCacheIndexsTemplateIsWhatSchemaCreationWrites() throws {
        let made = try TemporaryDirectory.make(prefix: "fetchctl-template-cache") + "/index.sqlite"
        let (pool, count) = try SQLiteResponseCache.open(made, template: nil)
        #expect(count == 0)
        try pool.close()
        try expectTemplate(PackageResources.cache_index_sqlite, named: "cache-index.sqlite", isWhatWasMadeAt: made, emptyTable: "responses")
    }

    /// A new state directory's stores are their templates, byte for byte, once opened.
    @Test func newStoresAreWrittenFromTheirTemplates() throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-template-new") + "/state"
        let store = try StateStore(directory: directory)
        let cache = try SQLiteResponseCache(directory: directory + "/cache")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/state.sqlite"))) == PackageResources.state_sqlite)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/cache/index.sqlite"))) == PackageResources.cache_index_sqlite)
        // And they work: a run is recorded, and read back by a second opening.
        try store.beginRun(id: "run-1", jobsFile: "jobs.yaml", jobs: 1)
        _ = cache
        #expect(try StateStore(directory: directory).pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM runs") } == 1)
    }

    /// Written once, never over a file that is there, with nothing else left in the directory,
    /// also when many threads make the same store at once; as an unnamed file, and under a hidden
    /// name where the file system has no unnamed files.
    @Test(arguments: [true, false]) func aTemplateIsWrittenOnceAndNeverOverAFile(unnamedFiles: Bool) throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-template-once")
        let template: [UInt8] = Array("a template".utf8)
        let path = directory + "/new.sqlite"
        #expect(StoreTemplate.create(at: path, from: template, unnamedFiles: unnamedFiles))
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == template)
        #expect(!StoreTemplate.create(at: path, from: Array("another".utf8), unnamedFiles: unnamedFiles))
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == template)

        let existing = directory + "/existing.sqlite"
        #expect(FileManager.default.createFile(atPath: existing, contents: Data("kept".utf8)))
        #expect(!StoreTemplate.create(at: existing, from: template, unnamedFiles: unnamedFiles))
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "kept")
        #expect(!StoreTemplate.create(at: directory + "/empty.sqlite", from: []))

        let raced = directory + "/raced.sqlite"
        let wins = LockedBox(0)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            if StoreTemplate.create(at: raced, from: template, unnamedFiles: unnamedFiles) { wins.withLock { $0 += 1 } }
        }
        #expect(wins.withLock { $0 } == 1)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: raced))) == template)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["existing.sqlite", "new.sqlite", "raced.sqlite"])
    }
}


/// A store's file deleted without its WAL: SQLite discards a WAL whose database is empty, but a
/// template is not empty, and SQLite would lay the old WAL's pages over it.
@Suite struct StaleWALTests {
    @Test func aNewStoreBesideAnOldWALIsMadeWithSQLAndWorks() throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-template-stale") + "/state"
        let old = try StateStore(directory: directory)
        for n in 0..<50 { try old.beginRun(id: "run-\(n)", jobsFile: "jobs.yaml", jobs: 1) }
        let wal = directory + "/state.sqlite-wal"
        let kept = try Data(contentsOf: URL(fileURLWithPath: wal))
        #expect(kept.count > 0)
        try old.pool.close()
        // The user deletes the store's file; a WAL like the one the store had is left beside it.
        try FileManager.default.removeItem(atPath: directory + "/state.sqlite")
        try kept.write(to: URL(fileURLWithPath: wal))
        let store = try StateStore(directory: directory)
        #expect(try store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM runs") } == 0)
        #expect(try store.pool.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
        try store.beginRun(id: "new", jobsFile: "jobs.yaml", jobs: 1)
        #expect(try store.recentRuns().map(\.id) == ["new"])
    }
}
