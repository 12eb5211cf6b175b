import Crypto
import Foundation
import GRDB

/// The index's format: its migrations, and the key its rows are found by.
extension SQLiteResponseCache {
    /// A canonical URL's key in the index: its SHA-256, so that the index holds no URL's secret
    /// (a token in a query); the row has the URL only redacted. `key`, the digest's first 8 bytes,
    /// is what the unique index holds: a 64-character text made the index about four times as
    /// large, and a million-row index then outgrew the writer's page cache (2.2 page reads and 3.9
    /// page writes a stored response at a million, 0.7 and 1.7 at 100,000; now 1.1 and 2.5 at a
    /// million). `hex`, the whole digest, is kept in
    /// the row and checked by every lookup: two URLs whose keys collide share a row (the later
    /// replaces the earlier), never an answer.
    ///
    /// The digest is kept as bytes: its hex is written where a statement binds it (`writeHex`),
    /// rather than made a string for every stored response.
    struct URLDigest {
        let digest: SHA256Digest
        let key: Int64

        init(_ url: String) {
            var url = url
            digest = url.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
            key = digest.withUnsafeBytes(Self.key)
        }

        /// The whole digest in lowercase hex (the row's `url_hash`).
        var hex: String { digest.withUnsafeBytes(Hex.string) }

        /// The length of `hex`.
        static let hexCount = 2 * SHA256Digest.byteCount

        /// Writes `hex` into `buffer` (`hexCount` bytes): where a statement binds it, with no string made.
        func writeHex(into buffer: UnsafeMutableBufferPointer<UInt8>) {
            digest.withUnsafeBytes { Hex.write($0, into: buffer) }
        }

        /// The first 8 bytes of a digest, big-endian, as SQLite's signed integer.
        static func key(_ digest: UnsafeRawBufferPointer) -> Int64 {
            Int64(bitPattern: digest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) })
        }

        /// `key` from a digest's hex text (the rows of an index made before `url_key`); 0 for a
        /// text that isn't one.
        static func key(hex: String) -> Int64 {
            guard hex.utf8.count >= 16, let value = UInt64(hex.prefix(16), radix: 16) else { return 0 }
            return Int64(bitPattern: value)
        }
    }

    /// The schema the migrations below make, written at once into a new index (`SchemaCreation`:
    /// the migrations were 7.6 of the 13.8 million instructions of making an index).
    /// `CacheIndexFormatTests` checks that the two agree, table by table and index by index.
    static let currentSchema = """
        CREATE TABLE responses (
          id INTEGER PRIMARY KEY,
          url_key INTEGER NOT NULL,
          url_hash TEXT NOT NULL,
          method TEXT NOT NULL,
          vary_key TEXT NOT NULL,
          vary_names TEXT,
          url TEXT NOT NULL,
          status INTEGER NOT NULL,
          headers TEXT NOT NULL,
          request_time REAL NOT NULL,
          response_time REAL NOT NULL,
          ttl REAL,
          invalidated INTEGER NOT NULL DEFAULT 0,
          body TEXT NOT NULL,
          body_size INTEGER NOT NULL,
          stored_at REAL NOT NULL,
          used_at REAL NOT NULL,
          hits INTEGER NOT NULL DEFAULT 0,
          body_mtime INTEGER,
          UNIQUE (url_key, method, vary_key)
        );
        CREATE TABLE usage (
          run_id TEXT PRIMARY KEY,
          finished_at REAL NOT NULL,
          hits INTEGER NOT NULL,
          revalidated INTEGER NOT NULL,
          stale INTEGER NOT NULL,
          misses INTEGER NOT NULL
        );
        CREATE TABLE body_bytes (id INTEGER PRIMARY KEY CHECK (id = 0), bound INTEGER NOT NULL);
        INSERT INTO body_bytes (id, bound) VALUES (0, 0);
        """

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: responses, usage") { db in
            try db.execute(sql: """
                CREATE TABLE responses (
                  id INTEGER PRIMARY KEY,
                  url_hash TEXT NOT NULL,
                  method TEXT NOT NULL,
                  vary_key TEXT NOT NULL,
                  vary_names TEXT,
                  url TEXT NOT NULL,
                  status INTEGER NOT NULL,
                  headers TEXT NOT NULL,
                  request_time REAL NOT NULL,
                  response_time REAL NOT NULL,
                  ttl REAL,
                  invalidated INTEGER NOT NULL DEFAULT 0,
                  body TEXT NOT NULL,
                  body_size INTEGER NOT NULL,
                  stored_at REAL NOT NULL,
                  used_at REAL NOT NULL,
                  hits INTEGER NOT NULL DEFAULT 0,
                  UNIQUE (url_hash, method, vary_key)
                );
                CREATE INDEX responses_by_use ON responses (used_at);
                CREATE TABLE usage (
                  run_id TEXT PRIMARY KEY,
                  finished_at REAL NOT NULL,
                  hits INTEGER NOT NULL,
                  revalidated INTEGER NOT NULL,
                  stale INTEGER NOT NULL,
                  misses INTEGER NOT NULL
                );
                """)
        }
        migrator.registerMigration("v2: body_mtime") { db in
            // Bodies linked to a job's output (see SQLiteCacheBodyWriter): their modification time
            // is checked with their size before they are served. NULL in rows stored before.
            try db.execute(sql: "ALTER TABLE responses ADD COLUMN body_mtime INTEGER")
        }
        migrator.registerMigration("v3: no index on used_at") { db in
            // Every store and every hit's `used_at` update paid for this index; only pruning past
            // `max_size` reads rows in `used_at` order, and it sums every row's size first anyway.
            try db.execute(sql: "DROP INDEX IF EXISTS responses_by_use")
        }
        migrator.registerMigration("v4: integer url key") { db in
            // The unique index on `url_key` (see `URLDigest`) instead of the 64-character
            // `url_hash`: SQLite can't change a table's constraint, so the table is made again,
            // its rows copied (a million-row index takes a few seconds, once). Two old rows whose
            // keys collide keep the later one.
            db.add(function: DatabaseFunction("fetchctl_url_key", argumentCount: 1, pure: true) { values in
                String.fromDatabaseValue(values[0]).map(URLDigest.key(hex:)) ?? 0
            })
            try db.execute(sql: """
                CREATE TABLE responses_v4 (
                  id INTEGER PRIMARY KEY,
                  url_key INTEGER NOT NULL,
                  url_hash TEXT NOT NULL,
                  method TEXT NOT NULL,
                  vary_key TEXT NOT NULL,
                  vary_names TEXT,
                  url TEXT NOT NULL,
                  status INTEGER NOT NULL,
                  headers TEXT NOT NULL,
                  request_time REAL NOT NULL,
                  response_time REAL NOT NULL,
                  ttl REAL,
                  invalidated INTEGER NOT NULL DEFAULT 0,
                  body TEXT NOT NULL,
                  body_size INTEGER NOT NULL,
                  stored_at REAL NOT NULL,
                  used_at REAL NOT NULL,
                  hits INTEGER NOT NULL DEFAULT 0,
                  body_mtime INTEGER,
                  UNIQUE (url_key, method, vary_key)
                );
                INSERT OR REPLACE INTO responses_v4 (id, url_key, url_hash, method, vary_key, vary_names, url, status, headers,
                    request_time, response_time, ttl, invalidated, body, body_size, stored_at, used_at, hits, body_mtime)
                  SELECT id, fetchctl_url_key(url_hash), url_hash, method, vary_key, vary_names, url, status, headers,
                    request_time, response_time, ttl, invalidated, body, body_size, stored_at, used_at, hits, body_mtime
                  FROM responses ORDER BY id;
                DROP TABLE responses;
                ALTER TABLE responses_v4 RENAME TO responses;
                """)
        }
        migrator.registerMigration("v5: body_bytes") { db in
            // An upper bound on the bodies' total size (`SQLiteCacheRows.BodyBytes`), so that the
            // end of a run need not sum every row's size to know it is under `max_size`.
            try db.execute(sql: """
                CREATE TABLE body_bytes (id INTEGER PRIMARY KEY CHECK (id = 0), bound INTEGER NOT NULL);
                INSERT INTO body_bytes (id, bound) SELECT 0, COALESCE(SUM(body_size), 0) FROM responses;
                """)
        }
        return migrator
    }
}
