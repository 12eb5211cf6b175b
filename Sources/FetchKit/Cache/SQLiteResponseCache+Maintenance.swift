import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// The store's upkeep: what a run leaves behind (use counts, pruning) and what `fetchctl cache`
/// reads and removes.
extension SQLiteResponseCache {

    /// Closes the index's connections for a process that exits next, after `finishRun`
    /// (`StoreConnections.closeForExit`). The cache answers nothing after it.
    public func closeForExit() {
        lookups.closeForExit()
        pool.closeForExit()
    }

    /// Writes what this process served (for LRU and `cache stats`' hit ratio of the last run), then
    /// prunes to `maxSize`. Called once at the end of a run.
    public func finishRun(id runID: String, maxSize: Int64?) async {
        await flushDeferred()
        let (served, counts) = state.withLock { s -> ([Int64: Int], [Int]) in
            defer { s.served = [:]; s.counts = s.counts.map { _ in 0 } }
            return (s.served, s.counts)
        }
        let usage = [RequestMetrics.CacheUse.hit, .revalidated, .stale, .miss].map { counts[$0.index] }
        let now = Date().timeIntervalSince1970
        // The bodies' size bound is read in the same transaction: a cache under `maxSize` is then
        // done with one write, and `prune` (a transaction of its own) runs only when it is over.
        var bound: Int64?
        do {
            bound = try await write { db in
                try SQLiteCacheRows.touch(served, at: now, in: db)
                if usage.contains(where: { $0 > 0 }) {
                    try db.execute(sql: "INSERT OR REPLACE INTO usage (run_id, finished_at, hits, revalidated, stale, misses) VALUES (?, ?, ?, ?, ?, ?)",
                                   arguments: [runID, now, usage[0], usage[1], usage[2], usage[3]])
                }
                return try SQLiteCacheRows.BodyBytes.bound(in: db)
            }
        } catch {
            report(indexPath, "cannot record the response cache's use: \(error)")
        }
        if let maxSize, (bound ?? .max) > maxSize { _ = await prune(maxSize: maxSize) }
        sweepTemporaryFiles()
    }

    /// Removes least recently used entries until the bodies total at most `maxSize` bytes, and
    /// entries not used for `olderThan`. With `sweep`, also removes body files no row names and
    /// temporary files older than an hour (left by a killed process). Returns what was removed.
    @discardableResult
    public func prune(maxSize: Int64? = nil, olderThan: TimeInterval? = nil, sweep: Bool = false) async -> CachePruneResult {
        var result = CachePruneResult()
        do {
            let removed = try await write { db -> [(String, Int64)] in
                var removed: [(String, Int64)] = []
                if let olderThan {
                    let cutoff = Date().timeIntervalSince1970 - olderThan
                    let rows = try Row.fetchAll(db, sql: "SELECT body, body_size FROM responses WHERE used_at < ?", arguments: [cutoff])
                    removed += rows.map { ($0["body"], $0["body_size"]) }
                    try db.execute(sql: "DELETE FROM responses WHERE used_at < ?", arguments: [cutoff])
                }
                // Under the bound (`SQLiteCacheRows.BodyBytes`) the rows need not be summed.
                if let maxSize, try (SQLiteCacheRows.BodyBytes.bound(in: db) ?? .max) > maxSize {
                    var total = try Int64.fetchOne(db, sql: "SELECT COALESCE(SUM(body_size), 0) FROM responses") ?? 0
                    defer { try? SQLiteCacheRows.BodyBytes.set(total, in: db) }
                    if total > maxSize {
                        // The whole index is sorted by use (it has no index on used_at: stores would
                        // pay for one). SQLite's sorter keeps up to `cache_size` in memory (the
                        // writer's, up to 16 MiB: `WriterPageCache`), and pruning 300,000 entries
                        // raised a crawl's peak RSS by half: sort in 2 MiB and spill the rest to a
                        // temporary file.
                        try db.execute(sql: "PRAGMA cache_size = -2048")
                        let pageCache = self.state.withLock { $0.pageCacheKiB }
                        defer { WriterPageCache.set(pageCache, in: db) }
                        let rows = try Row.fetchCursor(db, sql: "SELECT id, body, body_size FROM responses ORDER BY used_at, id")
                        var ids: [Int64] = []
                        while total > maxSize, let row = try rows.next() {
                            ids.append(row["id"])
                            removed.append((row["body"], row["body_size"]))
                            total -= row["body_size"] as Int64
                        }
                        for chunk in stride(from: 0, to: ids.count, by: 500) {
                            let part = ids[chunk..<min(chunk + 500, ids.count)]
                            try db.execute(sql: "DELETE FROM responses WHERE id IN (\(part.map { _ in "?" }.joined(separator: ",")))",
                                           arguments: StatementArguments(Array(part)))
                        }
                    }
                }
                return removed
            }
            for (body, size) in removed {
                unlink((directory as NSString).appendingPathComponent(body))
                result.entries += 1
                result.bytes += size
            }
        } catch {
            report(indexPath, "cannot prune the response cache: \(error)")
        }
        if sweep { result.orphans = await sweepOrphans() }
        return result
    }

    /// Removes every entry and body.
    public func clear() async throws -> CachePruneResult {
        var result = CachePruneResult()
        let (count, bytes) = try await write { db -> (Int, Int64) in
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM responses") ?? 0
            let bytes = try Int64.fetchOne(db, sql: "SELECT COALESCE(SUM(body_size), 0) FROM responses") ?? 0
            try db.execute(sql: "DELETE FROM responses; DELETE FROM usage")
            try SQLiteCacheRows.BodyBytes.set(0, in: db)
            return (count, bytes)
        }
        result.entries = count
        result.bytes = bytes
        try? FileManager.default.removeItem(atPath: bodiesPath)
        try? FileManager.default.removeItem(atPath: temporaryPath)
        return result
    }

    /// Temporary body files older than an hour (left by a killed process), removed at the end of
    /// every run; orphan bodies in `bodies/` (rows a kill lost) wait for `fetchctl cache prune`,
    /// whose listing of every body would cost a large cache too much at each run.
    @discardableResult
    func sweepTemporaryFiles() -> Int {
        var removed = 0
        let hourAgo = Date().addingTimeInterval(-3600)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporaryPath)) ?? [] {
            let path = (temporaryPath as NSString).appendingPathComponent(name)
            if let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date, modified < hourAgo,
               unlink(path) == 0 {
                removed += 1
            }
        }
        return removed
    }

    private func sweepOrphans() async -> Int {
        let known: Set<String>
        do {
            known = Set(try await pool.read { db in try String.fetchAll(db, sql: "SELECT body FROM responses") })
        } catch {
            return 0
        }
        var removed = 0
        let files = FileManager.default
        // Only orphans older than an hour: a run sharing this cache (a shard, another jobs file)
        // writes its saves' bodies here before their rows exist.
        let hourAgo = Date().timeIntervalSince1970 - 3600
        for bucket in (try? files.contentsOfDirectory(atPath: bodiesPath)) ?? [] {
            let folder = (bodiesPath as NSString).appendingPathComponent(bucket)
            for name in (try? files.contentsOfDirectory(atPath: folder)) ?? [] where !known.contains("bodies/\(bucket)/\(name)") {
                let path = (folder as NSString).appendingPathComponent(name)
                var info = stat()
                guard stat(path, &info) == 0, Double(info.st_mtim.tv_sec) < hourAgo else { continue }
                if unlink(path) == 0 { removed += 1 }
            }
        }
        return removed + sweepTemporaryFiles()
    }

    // MARK: Reading, for `fetchctl cache`

    /// Entries, bytes, the oldest entry and the last run's use.
    public func statistics() async throws -> CacheStatistics {
        try await pool.read { db in
            var stats = CacheStatistics()
            if let row = try Row.fetchOne(db, sql: "SELECT count(*) AS n, COALESCE(SUM(body_size), 0) AS bytes, MIN(stored_at) AS oldest FROM responses") {
                stats.entries = row["n"]
                stats.bytes = row["bytes"]
                stats.oldest = (row["oldest"] as Double?).map { Date(timeIntervalSince1970: $0) }
            }
            if let row = try Row.fetchOne(db, sql: "SELECT * FROM usage ORDER BY finished_at DESC LIMIT 1") {
                stats.lastRun = CacheStatistics.RunUse(runID: row["run_id"], hits: row["hits"], revalidated: row["revalidated"],
                                                       stale: row["stale"], misses: row["misses"])
            }
            return stats
        }
    }

    /// Stored entries (redacted URLs), most recently used first, optionally only those whose URL starts with `prefix`.
    public func list(urlPrefix prefix: String? = nil) async throws -> [CacheListing] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM responses ORDER BY used_at DESC, id DESC").compactMap { row -> CacheListing? in
                let url: String = row["url"]
                if let prefix, !url.hasPrefix(prefix) { return nil }
                return CacheListing(method: row["method"], url: url, status: row["status"], bytes: row["body_size"],
                                    storedAt: Date(timeIntervalSince1970: row["stored_at"]), usedAt: Date(timeIntervalSince1970: row["used_at"]),
                                    hits: row["hits"], headers: Self.decode(row["headers"]),
                                    responseTime: Date(timeIntervalSince1970: row["response_time"]),
                                    requestTime: Date(timeIntervalSince1970: row["request_time"]), ttl: row["ttl"],
                                    invalidated: row["invalidated"])
            }
        }
    }
}
