import Foundation
import GRDB

/// One range of a download fetched over several connections: bytes `start...end` of the file, of
/// which the first `done` are on disk in the `.part`.
public struct DownloadSegment: Sendable, Equatable {
    public var index: Int
    public var start: Int64
    /// Inclusive, as in `Range: bytes=start-end`.
    public var end: Int64
    public var done: Int64

    public init(index: Int, start: Int64, end: Int64, done: Int64 = 0) {
        self.index = index
        self.start = start
        self.end = end
        self.done = done
    }

    public var length: Int64 { end - start + 1 }
    public var isComplete: Bool { done >= length }
    /// The next byte to fetch.
    public var next: Int64 { start + done }
}

extension StateStore {
    /// The segments recorded for `destination`, in order; empty when it was not split.
    public func segments(at destination: String) throws -> [DownloadSegment] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT idx, start, end, done FROM download_segments WHERE destination = ? ORDER BY idx",
                             arguments: [destination]).map { row in
                DownloadSegment(index: row["idx"], start: row["start"], end: row["end"], done: row["done"])
            }
        }
    }

    /// Records `segments` as the whole plan for `destination`, replacing any other.
    public func saveSegments(_ segments: [DownloadSegment], at destination: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM download_segments WHERE destination = ?", arguments: [destination])
            for segment in segments {
                try db.execute(sql: "INSERT INTO download_segments (destination, idx, start, end, done) VALUES (?, ?, ?, ?, ?)",
                               arguments: [destination, segment.index, segment.start, segment.end, segment.done])
            }
        }
    }

    /// How much of segment `index` is on disk. Only ever called after those bytes were written.
    public func saveSegmentProgress(at destination: String, index: Int, done: Int64) throws {
        try write { db in
            try db.execute(sql: "UPDATE download_segments SET done = ? WHERE destination = ? AND idx = ?", arguments: [done, destination, index])
        }
    }

    public func deleteSegments(at destination: String) throws {
        try write { db in try db.execute(sql: "DELETE FROM download_segments WHERE destination = ?", arguments: [destination]) }
    }
}
