import Foundation
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
    /// The lengths of the fan-out spools this job feeds, by fan-out entry, after the last committed page.
    public var spoolBytes: [String: Int64] = [:]
    /// The greatest `incremental.from` value the committed pages held.
    public var incremental: String?

    /// The crawl ended early (`max_pages`, a loop), recorded with its last page.
    public var truncated: Bool { next == "end-truncated" }
}

extension StateStore {
    public func paginationProgress(job: String) throws -> PaginationProgress? {
        try pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM pagination_progress WHERE job = ?", arguments: [job]).map { row in
                PaginationProgress(fingerprint: row["fingerprint"], page: row["page"], next: row["next"], records: row["records"],
                                   itemsBytes: row["items_bytes"], bytes: row["bytes"], requests: row["requests"],
                                   spoolBytes: Self.decodeSpoolBytes(row["spool_bytes"]),
                                   incremental: row["incremental"])
            }
        }
    }

    /// Records a committed page and the request that comes next. Only called once the page's
    /// outputs are on disk (and synced).
    public func savePaginationProgress(_ progress: PaginationProgress, job: String) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO pagination_progress (job, fingerprint, page, next, records, items_bytes, bytes, requests, spool_bytes, incremental)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(job) DO UPDATE SET fingerprint = excluded.fingerprint, page = excluded.page, next = excluded.next,
                  records = excluded.records, items_bytes = excluded.items_bytes, bytes = excluded.bytes, requests = excluded.requests,
                  spool_bytes = excluded.spool_bytes, incremental = excluded.incremental
                """, arguments: [job, progress.fingerprint, progress.page, progress.next, progress.records, progress.itemsBytes,
                                 progress.bytes, progress.requests, Self.encodeSpoolBytes(progress.spoolBytes),
                                 progress.incremental])
        }
    }

    /// `entry=length` pairs, comma-separated: fan-out entries are job ids (`[A-Za-z0-9_.-]+`), which
    /// hold neither.
    static func encodeSpoolBytes(_ lengths: [String: Int64]) -> String {
        lengths.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }

    static func decodeSpoolBytes(_ text: String) -> [String: Int64] {
        var lengths: [String: Int64] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let length = Int64(parts[1]) { lengths[String(parts[0])] = length }
        }
        return lengths
    }

    /// Forgets a job's progress: it finished (its outputs are in place) or starts over.
    public func clearPaginationProgress(job: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM pagination_progress WHERE job = ?", arguments: [job])
        }
    }
}

/// An `incremental:` job's cursor as the store keeps it.
public struct IncrementalCursor: Sendable, Equatable {
    public var job: String
    public var cursor: String
    public var updatedAt: Date
    public var runID: String
}

extension StateStore {
    public func incrementalCursor(job: String) throws -> String? {
        try pool.read { db in try String.fetchOne(db, sql: "SELECT cursor FROM incremental_cursors WHERE job = ?", arguments: [job]) }
    }

    /// Every cursor, by job id.
    public func incrementalCursors() throws -> [IncrementalCursor] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT job, cursor, updated_at, run_id FROM incremental_cursors ORDER BY job").map { row in
                IncrementalCursor(job: row["job"], cursor: row["cursor"], updatedAt: Date(timeIntervalSince1970: row["updated_at"]), runID: row["run_id"])
            }
        }
    }

    /// Advances a job's cursor: only called once the job fully succeeded.
    public func saveIncrementalCursor(_ cursor: String, job: String, runID: String, at date: Date = Date()) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO incremental_cursors (job, cursor, updated_at, run_id) VALUES (?, ?, ?, ?)
                ON CONFLICT(job) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at, run_id = excluded.run_id
                """, arguments: [job, cursor, date.timeIntervalSince1970, runID])
        }
    }

    /// `--reset-incremental JOB`: the job's cursors (its own, and its expansions' `JOB[…]`) are
    /// forgotten, so its next run starts from `initial`. Returns how many there were.
    @discardableResult
    public func resetIncrementalCursors(job: String) throws -> Int {
        var removed = 0
        try write { db in
            try db.execute(sql: "DELETE FROM incremental_cursors WHERE job = ? OR substr(job, 1, ?) = ?",
                           arguments: [job, job.utf8.count + 1, job + "["])
            removed = db.changesCount
        }
        return removed
    }
}
