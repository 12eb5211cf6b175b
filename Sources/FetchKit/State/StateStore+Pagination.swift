import GRDB

/// How far a paginated job got: the last page whose outputs are on disk, the request that comes
/// next, and how much of the `save_items` file those pages wrote.
public struct PaginationProgress: Sendable, Equatable {
    /// `Pagination.fingerprint` and the first request's URL: progress made by another pagination
    /// (the route or the job changed) is not continued.
    public var fingerprint: String
    /// Pages committed.
    public var page: Int
    /// The next request (`PageCursor.encoded`).
    public var next: String
    /// Records written so far.
    public var records: Int
    /// Length of the `save_items` `.part` after the last committed page.
    public var itemsBytes: Int64
    /// Body bytes and requests so far, for the job's result.
    public var bytes: Int64
    public var requests: Int
    /// The lengths of the fan-out spools this job feeds, after the last committed page.
    public var spoolBytes: [Int64] = []
}

extension StateStore {
    public func paginationProgress(job: String) throws -> PaginationProgress? {
        try pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM pagination_progress WHERE job = ?", arguments: [job]).map { row in
                PaginationProgress(fingerprint: row["fingerprint"], page: row["page"], next: row["next"], records: row["records"],
                                   itemsBytes: row["items_bytes"], bytes: row["bytes"], requests: row["requests"],
                                   spoolBytes: (row["spool_bytes"] as String).split(separator: ",").compactMap { Int64($0) })
            }
        }
    }

    /// Records a committed page and the link or cursor that led to the next one, in one transaction.
    /// Only called once the page's outputs are on disk (and synced).
    public func savePaginationProgress(_ progress: PaginationProgress, job: String, seen key: String?) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO pagination_progress (job, fingerprint, page, next, records, items_bytes, bytes, requests, spool_bytes)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(job) DO UPDATE SET fingerprint = excluded.fingerprint, page = excluded.page, next = excluded.next,
                  records = excluded.records, items_bytes = excluded.items_bytes, bytes = excluded.bytes, requests = excluded.requests,
                  spool_bytes = excluded.spool_bytes
                """, arguments: [job, progress.fingerprint, progress.page, progress.next, progress.records, progress.itemsBytes,
                                 progress.bytes, progress.requests, progress.spoolBytes.map(String.init).joined(separator: ",")])
            if let key {
                try db.execute(sql: "INSERT OR IGNORE INTO pagination_seen (job, key) VALUES (?, ?)", arguments: [job, key])
            }
        }
    }

    /// The next links and cursors a job followed in the run being continued.
    public func paginationSeen(job: String) throws -> Set<String> {
        try pool.read { db in
            Set(try String.fetchAll(db, sql: "SELECT key FROM pagination_seen WHERE job = ?", arguments: [job]))
        }
    }

    /// Forgets a job's progress: it finished (its outputs are in place) or starts over.
    public func clearPaginationProgress(job: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM pagination_progress WHERE job = ?", arguments: [job])
            try db.execute(sql: "DELETE FROM pagination_seen WHERE job = ?", arguments: [job])
        }
    }
}
