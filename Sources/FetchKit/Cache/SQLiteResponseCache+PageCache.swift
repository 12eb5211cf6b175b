import GRDB

/// The response cache writer's SQLite page cache, sized to the index it writes.
extension SQLiteResponseCache {
    /// The writer's page cache, sized to the index it writes (`PRAGMA cache_size`, set when the
    /// cache opens and grown as rows are inserted). SQLite keeps every page it has touched until
    /// its cache is full, and with a fixed 16 MiB a cold 20,000-response run kept the 9 MB of table
    /// pages it appended, which nothing reads again: 2,000 page faults and 6 MB of peak RSS. What an
    /// insert reads again is the unique index, at a random place (its key is a hash): about 32
    /// bytes a row, which a million-row index needs cached (a 1M-job cold run took 74 s with 2 MiB
    /// and 62 s with 16, bench/scale.sh; 32 measured no better).
    enum WriterPageCache {
        static let minimumKiB = 2048
        static let maximumKiB = 16384

        static func kibibytes(forRows rows: Int) -> Int {
            min(maximumKiB, minimumKiB + rows / 32)  // 32 bytes a row
        }

        /// Sets the page cache of `db` (the writer's connection) to `kibibytes`. A failure leaves
        /// the size it had, which only costs memory or page reads.
        static func set(_ kibibytes: Int, in db: Database) {
            try? db.execute(sql: "PRAGMA cache_size = -\(kibibytes)")
        }

        /// The size for an index of `rows`, set on `db`.
        static func set(forRows rows: Int, in db: Database) {
            set(kibibytes(forRows: rows), in: db)
        }

        /// After `inserted` more rows: the size to set, when it has grown by a MiB or reached the
        /// most (one `PRAGMA` a MiB, not one a batch).
        static func grown(_ s: inout State, inserted: Int) -> Int? {
            s.indexRows += inserted
            let wanted = kibibytes(forRows: s.indexRows)
            guard wanted >= s.pageCacheKiB + 1024 || (wanted == maximumKiB && s.pageCacheKiB < maximumKiB) else { return nil }
            s.pageCacheKiB = wanted
            return wanted
        }
    }

    /// Grows the writer's page cache for `inserted` more rows, on the writer's connection.
    func growPageCache(_ db: Database, inserted: Int) {
        guard let size = state.withLock({ WriterPageCache.grown(&$0, inserted: inserted) }) else { return }
        WriterPageCache.set(size, in: db)
    }
}
