import Foundation
import GRDB
import GRDBSQLite

/// The response cache's per-request SQL, through SQLite's C API on statements GRDB prepared and
/// caches (as `JobResultRows` does for job results): a warm run looks up thousands of entries and
/// a cold one stores thousands, and GRDB's `Row` and `StatementArguments` cost more per call than
/// SQLite's own b-tree work. GRDB owns the connections and the transactions.
enum SQLiteCacheRows {
    /// Which of the index's columns its rows have: all of them, unless it was made by an older
    /// fetchctl and opened read-only (`cache stats`, `--dry-run`), so not migrated.
    struct Schema {
        /// `body_mtime` (v2).
        var hasModifiedColumn: Bool
        /// `url_key` (v4); before it, rows are found by `url_hash` alone.
        var hasURLKey: Bool
    }

    /// Every row for `digest` and `method`, newest first, as `CachedResponse`s for `url`. A row that
    /// can't be read (a hand-edited method, say) is skipped.
    static func lookup(digest: SQLiteResponseCache.URLDigest, method: HTTPMethod, url: String, schema: Schema, in db: Database) throws -> [CachedResponse] {
        let sql = schema.hasURLKey ? lookupSQL : schema.hasModifiedColumn ? lookupSQLBeforeV4 : lookupSQLBeforeV2
        let statement = try db.cachedStatement(sql: sql).sqliteStatement
        sqlite3_reset(statement)
        defer { sqlite3_reset(statement) }  // ends the statement's read at once
        if schema.hasURLKey { sqlite3_bind_int64(statement, 3, digest.key) }
        return try SQLiteC.withTextBuffer(capacity: SQLiteResponseCache.URLDigest.hexCount + method.rawValue.utf8.count, for: statement) { texts in
            texts.bind(count: SQLiteResponseCache.URLDigest.hexCount, at: 1, digest.writeHex)
            texts.bind(method.rawValue, at: 2)
            return try rows(of: statement, url: url, in: db)
        }
    }

    /// Steps a lookup's statement to its end: its rows, newest first.
    private static func rows(of statement: OpaquePointer, url: String, in db: Database) throws -> [CachedResponse] {
        var entries: [CachedResponse] = []
        while true {
            let code = sqlite3_step(statement)
            // Newest first, sorted here: nearly always one row, and an ORDER BY set up SQLite's
            // sorter for it on every lookup.
            if code == SQLITE_DONE {
                if entries.count > 1 { entries.sort { ($0.responseTime, $0.id) > ($1.responseTime, $1.id) } }
                return entries
            }
            guard code == SQLITE_ROW else { throw SQLiteC.failure(code, in: db, "SELECT FROM responses") }
            if let entry = entry(at: statement, url: url) { entries.append(entry) }
        }
    }

    /// Made once: GRDB finds its cached statement by this text, and a lookup built it anew each time.
    private static let lookupSQL = lookupSQL(modified: "body_mtime", where: "url_hash = ? AND method = ? AND url_key = ?")
    private static let lookupSQLBeforeV4 = lookupSQL(modified: "body_mtime", where: "url_hash = ? AND method = ?")
    private static let lookupSQLBeforeV2 = lookupSQL(modified: "NULL", where: "url_hash = ? AND method = ?")
    private static func lookupSQL(modified: String, where condition: String) -> String {
        """
        SELECT id, method, status, headers, request_time, response_time, vary_names, vary_key, ttl, invalidated, body_size, body,
               \(modified)
        FROM responses WHERE \(condition)
        """
    }

    private static func entry(at statement: OpaquePointer, url: String) -> CachedResponse? {
        guard let id = SQLiteC.int64(statement, 0), let method = SQLiteC.text(statement, 1).flatMap(HTTPMethod.init(rawValue:)),
              let status = SQLiteC.int64(statement, 2), let headers = SQLiteC.text(statement, 3),
              let requestTime = SQLiteC.double(statement, 4), let responseTime = SQLiteC.double(statement, 5),
              let varyKey = SQLiteC.text(statement, 7), let invalidated = SQLiteC.int64(statement, 9),
              let bodySize = SQLiteC.int64(statement, 10), let body = SQLiteC.text(statement, 11) else { return nil }
        var entry = CachedResponse(id: id, method: method, url: url, status: Int(status), headers: SQLiteResponseCache.decode(headers),
                                   requestTime: Date(timeIntervalSince1970: requestTime), responseTime: Date(timeIntervalSince1970: responseTime),
                                   varyNames: SQLiteC.text(statement, 6).map { $0.split(separator: " ").map(String.init) }, varyKey: varyKey,
                                   ttl: SQLiteC.double(statement, 8), invalidated: invalidated != 0, bodySize: bodySize)
        entry.storageName = body
        entry.storageModified = SQLiteC.int64(statement, 12)
        return entry
    }

    /// Inserts (or replaces) `rows` in the caller's transaction. Returns the bodies of the rows
    /// replaced, for the caller to remove once committed.
    static func insert(_ rows: [SQLiteResponseCache.PendingRow], in db: Database) throws -> [String] {
        // The row with the same key, method and variant: the same URL's, or (once in 2⁶⁴) one whose
        // key collides, which this row replaces (`URLDigest`).
        let existing = try db.cachedStatement(sql: "SELECT body, body_size FROM responses WHERE url_key = ? AND method = ? AND vary_key = ?").sqliteStatement
        let upsert = try db.cachedStatement(sql: """
            INSERT INTO responses (url_hash, method, vary_key, vary_names, url, headers, body, status, request_time, response_time, ttl,
                                   invalidated, body_size, body_mtime, stored_at, used_at, url_key)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 0, ?12, ?13, ?14, ?14, ?15)
            ON CONFLICT (url_key, method, vary_key) DO UPDATE SET url_hash = excluded.url_hash, vary_names = excluded.vary_names, url = excluded.url,
              status = excluded.status, headers = excluded.headers, request_time = excluded.request_time,
              response_time = excluded.response_time, ttl = excluded.ttl, invalidated = 0, body = excluded.body,
              body_size = excluded.body_size, body_mtime = excluded.body_mtime, stored_at = excluded.stored_at,
              used_at = excluded.used_at
            """).sqliteStatement
        defer {
            sqlite3_reset(existing)
            sqlite3_reset(upsert)
        }
        var replaced: [String] = []
        var added: Int64 = 0
        for row in rows {
            if !row.isNew {
                sqlite3_reset(existing)
                sqlite3_bind_int64(existing, 1, row.digest.key)
                SQLiteC.bind(row.method, to: existing, at: 2)
                SQLiteC.bind(row.varyKey, to: existing, at: 3)
                let code = sqlite3_step(existing)
                if code == SQLITE_ROW, let body = SQLiteC.text(existing, 0) {
                    replaced.append(body)
                    added -= sqlite3_column_int64(existing, 1)
                } else if code != SQLITE_DONE {
                    throw SQLiteC.failure(code, in: db, "SELECT body FROM responses")
                }
            }
            sqlite3_reset(upsert)
            try bind(row, to: upsert) { try SQLiteC.run(upsert, in: db, "INSERT INTO responses") }
            added += row.size
        }
        try BodyBytes.add(added, in: db)
        return replaced
    }

    /// Binds `row` to the insert's parameters and calls `body` while they are bound: the texts in
    /// place (the digest's hex from the stack, the others from the row's strings, none copied),
    /// then the numbers. The bindings are cleared after: they point into memory that is gone then.
    private static func bind(_ row: SQLiteResponseCache.PendingRow, to upsert: OpaquePointer, _ body: () throws -> Void) throws {
        SQLiteC.bind(Int64(row.status), to: upsert, at: 8)
        SQLiteC.bind(row.requestTime, to: upsert, at: 9)
        SQLiteC.bind(row.responseTime, to: upsert, at: 10)
        SQLiteC.bind(row.ttl, to: upsert, at: 11)
        SQLiteC.bind(row.size, to: upsert, at: 12)
        SQLiteC.bind(row.modified, to: upsert, at: 13)
        SQLiteC.bind(row.storedAt, to: upsert, at: 14)  // stored_at and used_at
        sqlite3_bind_int64(upsert, 15, row.digest.key)
        let hexCount = SQLiteResponseCache.URLDigest.hexCount
        let capacity = hexCount + row.method.utf8.count + row.varyKey.utf8.count + (row.varyNames?.utf8.count ?? 0) + row.url.utf8.count
            + row.headers.utf8.count + row.body.utf8.count
        try SQLiteC.withTextBuffer(capacity: capacity, for: upsert) { texts in
            texts.bind(count: hexCount, at: 1, row.digest.writeHex)
            texts.bind(row.method, at: 2)
            texts.bind(row.varyKey, at: 3)
            texts.bind(row.varyNames, at: 4)
            texts.bind(row.url, at: 5)
            texts.bind(row.headers, at: 6)
            texts.bind(row.body, at: 7)
            try body()
        }
    }

    /// Writes stored responses' new headers and freshness (`SQLiteResponseCache.update`, batched or
    /// one at a time) in the caller's transaction. A row whose body changed since the entry was read (a newer
    /// response stored for the URL) is left as it is.
    static func update(_ updates: [SQLiteResponseCache.PendingUpdate], in db: Database) throws {
        guard !updates.isEmpty else { return }
        let statement = try db.cachedStatement(sql: """
            UPDATE responses SET headers = ?1, status = ?3, request_time = ?4, response_time = ?5, invalidated = ?6, ttl = ?7
            WHERE id = ?8 AND (?2 = '' OR body = ?2)
            """).sqliteStatement
        defer { sqlite3_reset(statement) }
        for update in updates {
            sqlite3_reset(statement)
            try SQLiteC.withTextBuffer(capacity: update.headers.utf8.count + update.body.utf8.count, for: statement) { texts in
                texts.bind(update.headers, at: 1)
                texts.bind(update.body, at: 2)
                SQLiteC.bind(Int64(update.status), to: statement, at: 3)
                SQLiteC.bind(update.requestTime, to: statement, at: 4)
                SQLiteC.bind(update.responseTime, to: statement, at: 5)
                SQLiteC.bind(Int64(update.invalidated ? 1 : 0), to: statement, at: 6)
                SQLiteC.bind(update.ttl, to: statement, at: 7)
                SQLiteC.bind(update.id, to: statement, at: 8)
                try SQLiteC.run(statement, in: db, "UPDATE responses")
            }
        }
    }

    /// An upper bound on the total size of the index's bodies, kept in the one-row `body_bytes`
    /// table (schema v5): every insert adds its rows' sizes in its own transaction, less those of
    /// the rows they replace (a deleted row's size is not taken off, so it only ever
    /// overestimates), and `prune` sets it to
    /// the real total whenever it sums the rows. The end of every run compares it with `max_size`
    /// and sums the rows only when it is above: a sum reads the whole table, 25 ms at 100,000 rows
    /// and about ten times that at a million. (A fetchctl from before v5 writing to the same cache
    /// does not add to it; its own runs sum the rows, and the bound is corrected by the next sum.)
    enum BodyBytes {
        static func add(_ bytes: Int64, in db: Database) throws {
            guard bytes != 0 else { return }
            let statement = try db.cachedStatement(sql: "UPDATE body_bytes SET bound = bound + ? WHERE id = 0").sqliteStatement
            defer { sqlite3_reset(statement) }
            sqlite3_reset(statement)
            sqlite3_bind_int64(statement, 1, bytes)
            try SQLiteC.run(statement, in: db, "UPDATE body_bytes")
        }

        /// The bound; nil in an index without the table.
        static func bound(in db: Database) throws -> Int64? {
            guard try db.tableExists("body_bytes") else { return nil }
            return try Int64.fetchOne(db, sql: "SELECT bound FROM body_bytes WHERE id = 0")
        }

        static func set(_ bytes: Int64, in db: Database) throws {
            try db.execute(sql: "UPDATE body_bytes SET bound = ? WHERE id = 0", arguments: [bytes])
        }
    }

    /// Marks served entries used at `time` (`used_at`, least-recently-used pruning) and counts
    /// their hits, in the caller's transaction.
    static func touch(_ served: [Int64: Int], at time: Double, in db: Database) throws {
        let statement = try db.cachedStatement(sql: "UPDATE responses SET used_at = ?, hits = hits + ? WHERE id = ?").sqliteStatement
        defer { sqlite3_reset(statement) }
        for (id, hits) in served {
            sqlite3_reset(statement)
            SQLiteC.bind(time, to: statement, at: 1)
            SQLiteC.bind(Int64(hits), to: statement, at: 2)
            SQLiteC.bind(id, to: statement, at: 3)
            try SQLiteC.run(statement, in: db, "UPDATE responses")
        }
    }
}
