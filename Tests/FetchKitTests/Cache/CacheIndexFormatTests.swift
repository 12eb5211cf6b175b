import Foundation
import FetchKitTesting
import GRDB
import Testing
@testable import FetchKit

/// The index's rows are found by `url_key`, the first 8 bytes of the URL's SHA-256 (schema v4),
/// and checked against the whole digest. An index made before is migrated when opened for writing
/// and read as it is when opened read-only.
@Suite struct CacheIndexFormatTests {
    static let url = "http://127.0.0.1:8080/item/1"
    static let other = "http://127.0.0.1:8080/item/2"

    /// An index at schema v3 (before `url_key`) in a new directory, with a row for `url` and one for `other`.
    func indexBeforeTheIntegerKey() throws -> String {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests-cache-v3")
        let pool = try DatabasePool(path: directory + "/index.sqlite")
        try SQLiteResponseCache.migrator.migrate(pool, upTo: "v3: no index on used_at")
        try pool.write { db in
            for (index, url) in [Self.url, Self.other].enumerated() {
                try db.execute(sql: """
                    INSERT INTO responses (url_hash, method, vary_key, url, status, headers, request_time, response_time,
                                           body, body_size, stored_at, used_at)
                    VALUES (?, 'GET', '', ?, 200, ?, 1000, 1000, ?, 3, 1000, 1000)
                    """, arguments: [SQLiteResponseCache.URLDigest(url).hex, url,
                                     SQLiteResponseCache.encode(HTTPHeaders([("ETag", "\"v\(index)\"")])), "bodies/0/v3-\(index)"])
            }
        }
        try pool.close()
        return directory
    }

    func columns(_ directory: String) throws -> [String] {
        try DatabaseQueue(path: directory + "/index.sqlite").read { db in try db.columns(in: "responses").map(\.name) }
    }

    @Test func anIndexFromBeforeTheIntegerKeyIsReadAsItIsThenMigrated() async throws {
        let directory = try indexBeforeTheIntegerKey()
        // Read-only (`cache stats`, `--dry-run`): found by `url_hash`, the file left as it was.
        let readOnly = try SQLiteResponseCache(directory: directory, readOnly: true)
        let seen = await readOnly.entries(method: .get, url: Self.url)
        #expect(seen.map { $0.headers["ETag"] } == ["\"v0\""])
        #expect(try !columns(directory).contains("url_key"))

        // Opened to write: migrated, the same rows found by their key.
        let cache = try SQLiteResponseCache(directory: directory)
        #expect(try columns(directory).contains("url_key"))
        let found = await cache.entries(method: .get, url: Self.url)
        #expect(found.map(\.id) == seen.map(\.id))
        #expect(found.map { $0.headers["ETag"] } == ["\"v0\""])
        // The bodies' size bound starts at their total (two rows of 3 bytes).
        #expect(try await cache.pool.read { db in try SQLiteCacheRows.BodyBytes.bound(in: db) } == 6)
        let keys = try await cache.pool.read { db in try Int64.fetchAll(db, sql: "SELECT url_key FROM responses ORDER BY id") }
        #expect(keys == [SQLiteResponseCache.URLDigest(Self.url).key, SQLiteResponseCache.URLDigest(Self.other).key])
        // The lookup goes through the unique index on the key.
        let detail = try await cache.pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT id FROM responses WHERE url_hash = ? AND method = ? AND url_key = ?",
                             arguments: ["", "GET", 0]).map { $0["detail"] as String? ?? "" }.joined()
        }
        #expect(detail.contains("USING INDEX"), "\(detail)")

        // An invalidation removes its URL's row and leaves the other's.
        await cache.invalidate(url: Self.url)
        #expect(await cache.entries(method: .get, url: Self.url).isEmpty)
        #expect(await cache.entries(method: .get, url: Self.other).count == 1)
    }

    /// A row whose key is `url`'s but whose digest is another URL's (keys that collide) is not
    /// `url`'s answer.
    @Test func aRowWithTheSameKeyButAnotherDigestIsNoAnswer() async throws {
        let directory = try indexBeforeTheIntegerKey()
        let cache = try SQLiteResponseCache(directory: directory)
        try await cache.pool.write { db in
            try db.execute(sql: "DELETE FROM responses WHERE url = ?", arguments: [Self.url])
            try db.execute(sql: "UPDATE responses SET url_key = ? WHERE url = ?",
                           arguments: [SQLiteResponseCache.URLDigest(Self.url).key, Self.other])
        }
        #expect(await cache.entries(method: .get, url: Self.url).isEmpty)
    }

    /// Every table's columns (name, type, not null, default, key), its indexes and their columns,
    /// the bodies' size bound and the migrations recorded as applied.
    func describe(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            var lines: [String] = []
            let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            for table in tables {
                for column in try Row.fetchAll(db, sql: "PRAGMA table_info(\(table))") {
                    lines.append("\(table).\(column["name"] as String) \(column["type"] as String) notnull=\(column["notnull"] as Int) "
                                 + "default=\(column["dflt_value"] as String? ?? "-") pk=\(column["pk"] as Int)")
                }
                for index in try Row.fetchAll(db, sql: "PRAGMA index_list(\(table))") {
                    let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?)", arguments: [index["name"] as String])
                    lines.append("\(table) index unique=\(index["unique"] as Int) origin=\(index["origin"] as String) (\(columns.joined(separator: ", ")))")
                }
            }
            lines.append("bound \(try Int64.fetchAll(db, sql: "SELECT bound FROM body_bytes"))")
            lines.append("applied \(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier"))")
            return lines.sorted()
        }
    }

    /// A new index is written in one step (`createIfNew`); it must be what the migrations make.
    @Test func aNewIndexHasTheSchemaTheMigrationsMake() throws {
        let fresh = try TemporaryDirectory.make(prefix: "fetchctl-tests-cache-new")
        _ = try SQLiteResponseCache(directory: fresh)
        let migrated = try TemporaryDirectory.make(prefix: "fetchctl-tests-cache-migrated")
        try SQLiteResponseCache.migrator.migrate(try DatabaseQueue(path: migrated + "/index.sqlite"))
        let made = try describe(fresh + "/index.sqlite")
        #expect(made == (try describe(migrated + "/index.sqlite")))
        #expect(made.contains { $0.hasPrefix("responses index unique=1") && $0.hasSuffix("(url_key, method, vary_key)") }, "\(made)")
        // Opened again, nothing is left to migrate.
        _ = try SQLiteResponseCache(directory: fresh)
        #expect(try describe(fresh + "/index.sqlite") == made)
    }

    @Test func theKeyIsTheDigestsFirstEightBytes() {
        let digest = SQLiteResponseCache.URLDigest(Self.url)
        #expect(digest.hex.count == 64)
        #expect(SQLiteResponseCache.URLDigest.key(hex: digest.hex) == digest.key)
        #expect(SQLiteResponseCache.URLDigest.key(hex: "ffffffffffffffff" + String(repeating: "0", count: 48)) == -1)
        #expect(SQLiteResponseCache.URLDigest.key(hex: "not hex") == 0)
    }
}
