import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// How stored rows reach the index, and served entries their use: group commit for a library's stores (each waits for its row),
/// timed batches for `fetchctl run` (`batchesStores`), and the insert itself, which drops a row
/// whose URL was invalidated after it was made.
extension SQLiteResponseCache {
    /// Group commit: a store waits until its row is committed, and rows that arrive while a
    /// transaction is being written go into the next one together, so many jobs storing at once
    /// cost a few commits rather than one each, while a lone store is committed at once.
    ///
    /// With `batchesStores`, a store returns at once: its row is inserted by the next step and
    /// committed within 100 ms (`flushDeferred`).
    func commit(_ row: PendingRow) async {
        if batchesStores {
            let next = state.withLock { s -> BatchWrite? in
                row.isNew = s.empty && s.storedURLs.insertIfAbsent(row.urlHash)
                row.generation = s.generation
                s.deferred.append(row)
                s.uncommitted[row.urlHash, default: 0] += 1
                return batchWriteDue(&s)
            }
            if let next { _ = enqueue(next) }
            return
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let starts = state.withLock { s -> Bool in
                row.isNew = s.empty && s.storedURLs.insertIfAbsent(row.urlHash)
                row.generation = s.generation
                s.pending.append((row, done))
                defer { s.writing = true }
                return !s.writing
            }
            if starts { Task { await self.writePending() } }
        }
    }

    /// With `batchesStores`, a stored response's new headers (after a `304` or a `HEAD`) go into the
    /// next batch write with the rows stored meanwhile, and `update` returns at once, as a store
    /// does. Written one at a time, each was a transaction of its own that the job waited for: a
    /// rerun that revalidated 2,000 responses made 17,500 `futex` and 14,900 `fcntl` calls and
    /// took longer than downloading them all. A lookup of the URL waits for the commit, as it does
    /// for a stored row; a `kill -9` loses at most the last batch's new headers, and the next run
    /// revalidates those responses again.
    func commit(_ update: PendingUpdate) {
        let next = state.withLock { s -> BatchWrite? in
            s.deferredUpdates.append(update)
            s.uncommitted[update.urlHash, default: 0] += 1
            return batchWriteDue(&s)
        }
        if let next { _ = enqueue(next) }
    }

    /// Called under the lock once a row or an update joined the batch: the batch write due now, if
    /// any, and the commit timer started if none is running.
    private func batchWriteDue(_ s: inout State) -> BatchWrite? {
        s.sinceCommit += 1
        // A full batch is committed now, on another thread while the run goes on.
        if s.sinceCommit >= s.commitRows { return .commit }
        if s.flushTimer == nil {
            let interval = s.commitInterval
            // Holds the cache until it fires or a flush cancels it (`finishRun` flushes). Not
            // weakly: a weak reference gives the cache a side table, and every retain and release
            // of it (several per request) then takes the runtime's slow path.
            s.flushTimer = Task {
                try? await Task.sleep(for: interval)
                if !Task.isCancelled { await self.flushDeferred() }
            }
        }
        guard s.deferred.count + s.deferredUpdates.count >= Self.stepRows, !s.stepping else { return nil }
        s.stepping = true
        return .step
    }

    /// FNV-1a 64 of a URL: `storedURLs` is filled with these, not with a million URLs.
    static func urlHash(_ url: String) -> UInt64 { FNV1a.hash(url) }

    /// Rows a batch holds before it is committed without waiting for its timer. Each commit writes
    /// every index page its rows touched, and the index is keyed by a hash, so any batch touches
    /// pages all over it: fewer, larger commits write each page fewer times. A 20,000-response run
    /// made 43,000 `pwrite` calls with 512-row batches, 28,000 with this (it then commits on the
    /// timer). The 100 ms timer bounds what a `kill -9` loses either way.
    static let batchRows = 8192

    /// Rows gathered before a step inserts them into the open transaction. Inserting as rows come,
    /// on the writer's thread while the run goes on, leaves a commit little to do: a run's last
    /// commit had inserted every row of its last 100 ms after the last response, 4 ms for 2,000
    /// rows and 18 ms for 8,000, all of it before the process could exit.
    static let stepRows = 32

    /// What a batch write does with the rows it takes: insert them into the open transaction, or
    /// insert them and commit.
    enum BatchWrite { case step, commit }

    /// Commits the rows `batchesStores` gathered, after any write already under way: when it
    /// returns, every row stored before the call is committed (a lookup relies on that).
    func flushDeferred() async {
        await enqueue(.commit).value
    }

    /// Commits the rows gathered so far, without waiting: for the moment a run's last jobs have
    /// started. A run's commit writes every page its rows touched, and a 2,000-job run's rows were
    /// all in the one commit made after the last response; this way that last commit holds only
    /// the rows of the jobs still running then.
    public func commitSoon() {
        // Nothing stored since the last commit (a warm run's hits): no trip to the writer.
        guard batchesStores, state.withLock({ s in
            !s.deferred.isEmpty || !s.deferredUpdates.isEmpty || !s.inserted.isEmpty || !s.updated.isEmpty || s.stepping
        }) else { return }
        _ = enqueue(.commit)
    }

    /// Queues a batch write after the last one. Each takes the rows gathered when it is queued.
    private func enqueue(_ kind: BatchWrite) -> Task<Void, Never> {
        state.withLock { s -> Task<Void, Never> in
            let rows = s.deferred, updates = s.deferredUpdates
            s.deferred = []
            s.deferredUpdates = []
            if kind == .commit {
                // The timer's own flush cancels nothing that matters: it is past its sleep.
                s.flushTimer?.cancel()
                s.flushTimer = nil
                s.sinceCommit = 0
            }
            let previous = s.lastWrite
            s.writes += 1
            let number = s.writes
            let write = Task {
                await previous?.value
                await self.write(rows, updates, commit: kind == .commit)
                self.state.withLock { s in
                    if kind == .step { s.stepping = false }
                    if s.writes == number { s.lastWrite = nil }  // the last one: nothing holds the cache any more
                }
            }
            s.lastWrite = write
            return write
        }
    }

    /// Inserts `rows` and writes `updates` into the writer's open transaction (beginning one), and
    /// with `commit` commits it. A failed write loses the open transaction's rows and updates, as a
    /// failed commit always has. What is written and not committed is kept in `inserted` and
    /// `updated` on the writer's thread, so that a write of another kind, which commits it, finds
    /// it there.
    private func write(_ rows: [PendingRow], _ updates: [PendingUpdate], commit: Bool) async {
        let rows = dropInvalidated(rows)
        do {
            let done = try await pool.writeWithoutTransaction { db -> Written in
                if !rows.isEmpty || !updates.isEmpty {
                    if !db.isInsideTransaction { try db.beginTransaction(.immediate) }
                    let replaced = rows.isEmpty ? [] : try SQLiteCacheRows.insert(rows, in: db)
                    try SQLiteCacheRows.update(updates, in: db)
                    self.growPageCache(db, inserted: rows.count)
                    self.state.withLock { s in
                        s.inserted += rows
                        s.replacedBodies += replaced
                        s.updated += updates
                    }
                }
                guard commit else { return Written() }
                if db.isInsideTransaction { try db.commit() }
                return self.takeInserted()
            }
            for body in done.replaced { unlink((directory as NSString).appendingPathComponent(body)) }
            settle(done)
        } catch {
            let lost = (try? await pool.writeWithoutTransaction { db -> Written in
                if db.isInsideTransaction { try db.rollback() }
                return self.takeInserted()
            }) ?? Written()
            // The bodies they replaced stay: the rows naming them are back.
            let lostIDs = Set(lost.rows.map(ObjectIdentifier.init))
            let all = lost.rows + rows.filter { !lostIDs.contains(ObjectIdentifier($0)) }
            for row in all { unlink((directory as NSString).appendingPathComponent(row.body)) }
            // Lost updates leave their rows' older headers: those responses are revalidated again.
            let lostUpdateIDs = Set(lost.updates.map(ObjectIdentifier.init))
            settle(Written(rows: all, updates: lost.updates + updates.filter { !lostUpdateIDs.contains(ObjectIdentifier($0)) }))
            report(indexPath, "cannot store a response: \(error)")
        }
    }

    /// What the writer's open transaction held when it was committed or rolled back.
    struct Written {
        var rows: [PendingRow] = []
        var replaced: [String] = []
        var updates: [PendingUpdate] = []
    }

    /// The rows inserted and updates written and not yet settled, and the bodies the rows
    /// replaced; called on the writer once their transaction is committed (or rolled back).
    private func takeInserted() -> Written {
        state.withLock { s in
            defer { s.inserted = []; s.replacedBodies = []; s.updated = [] }
            return Written(rows: s.inserted, replaced: s.replacedBodies, updates: s.updated)
        }
    }

    /// The rows and updates are committed (or lost): lookups for their URLs no longer wait.
    private func settle(_ written: Written) {
        if written.rows.isEmpty && written.updates.isEmpty { return }
        state.withLock { s in
            // One lookup a hash, with no array of them made first.
            func settle(_ hash: UInt64) {
                guard let index = s.uncommitted.index(forKey: hash) else { return }
                if s.uncommitted.values[index] > 1 { s.uncommitted.values[index] -= 1 } else { s.uncommitted.remove(at: index) }
            }
            for row in written.rows { settle(row.urlHash) }
            for update in written.updates { settle(update.urlHash) }
        }
    }

    /// Any other write to the index, in a transaction of its own. It first commits the rows
    /// `batchesStores` left in the open transaction.
    func write<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let (result, done) = try await pool.writeWithoutTransaction { db -> (T, Written) in
            var done = Written()
            if db.isInsideTransaction {
                try db.commit()
                done = self.takeInserted()
            }
            var result: T?
            try db.inTransaction {
                result = try updates(db)
                return .commit
            }
            return (result!, done)
        }
        for body in done.replaced { unlink((directory as NSString).appendingPathComponent(body)) }
        settle(done)
        return result
    }

    func writePending() async {
        while true {
            let batch = state.withLock { s -> [(row: PendingRow, done: CheckedContinuation<Void, Never>)] in
                defer { s.pending = [] }
                if s.pending.isEmpty { s.writing = false }
                return s.pending
            }
            if batch.isEmpty { return }
            await insert(batch.map(\.row))
            for item in batch { item.done.resume() }
        }
    }

    /// Rows whose URL was invalidated after they were made are dropped, with their bodies.
    private func dropInvalidated(_ rows: [PendingRow]) -> [PendingRow] {
        let invalidated = state.withLock { $0.invalidatedAt }
        if invalidated.isEmpty { return rows }
        let (kept, dropped) = rows.reduce(into: ([PendingRow](), [PendingRow]())) { out, row in
            if let at = invalidated[row.key], at > row.generation { out.1.append(row) } else { out.0.append(row) }
        }
        for row in dropped { unlink((directory as NSString).appendingPathComponent(row.body)) }
        settle(Written(rows: dropped))
        return kept
    }

    /// Inserts and commits rows in one transaction (group commit).
    func insert(_ rows: [PendingRow]) async {
        let rows = dropInvalidated(rows)
        if rows.isEmpty { return }
        do {
            let replaced = try await write { db in
                defer { self.growPageCache(db, inserted: rows.count) }
                return try SQLiteCacheRows.insert(rows, in: db)
            }
            for body in replaced { unlink((directory as NSString).appendingPathComponent(body)) }
        } catch {
            for row in rows { unlink((directory as NSString).appendingPathComponent(row.body)) }
            report(indexPath, "cannot store a response: \(error)")
        }
    }

    /// An index row to insert (or replace) once its body is in place. A class, handed from the
    /// storing job to the batch and the writer without copying its strings (the struct's copies
    /// were 0.8% of a cold run's samples); `generation` and `isNew` are set under the cache's lock
    /// before the row is shared, and nothing changes it after.
    final class PendingRow: @unchecked Sendable {
        /// The canonical URL (kept in memory only; the row has its digest and the redacted URL).
        let key: String
        /// `urlHash(key)`, for the Bloom filter and `uncommitted`.
        let urlHash: UInt64
        /// The key and digest the index row has.
        let digest: SQLiteResponseCache.URLDigest
        let method: String
        let varyKey: String
        let varyNames: String?
        let url: String
        let status: Int
        let headers: String
        let requestTime: Double
        let responseTime: Double
        let ttl: Double?
        let body: String
        let size: Int64
        /// The body file's modification time (ns): a linked body edited through its other name is a miss.
        let modified: Int64?
        let storedAt: Double
        /// `State.generation` when the row was made.
        var generation = 0
        /// No row can exist for this URL yet (the index was empty when opened and this process
        /// stores the URL for the first time): the insert skips looking for a body to replace. (A
        /// process sharing the directory that stored the URL meanwhile leaves an orphan body, which
        /// `cache prune` removes.)
        var isNew = false

        init(key: String, digest: SQLiteResponseCache.URLDigest, method: String, varyKey: String, varyNames: String?, url: String, status: Int, headers: String,
             requestTime: Double, responseTime: Double, ttl: Double?, body: String, size: Int64, modified: Int64?, storedAt: Double) {
            self.key = key
            urlHash = SQLiteResponseCache.urlHash(key)
            self.digest = digest
            self.method = method
            self.varyKey = varyKey
            self.varyNames = varyNames
            self.url = url
            self.status = status
            self.headers = headers
            self.requestTime = requestTime
            self.responseTime = responseTime
            self.ttl = ttl
            self.body = body
            self.size = size
            self.modified = modified
            self.storedAt = storedAt
        }
    }

    /// A stored response's new headers and freshness (`update`), as the index row takes them.
    final class PendingUpdate: @unchecked Sendable {
        let id: Int64
        /// `urlHash` of the entry's URL, for `uncommitted`.
        let urlHash: UInt64
        let headers: String
        let status: Int
        let requestTime: Double
        let responseTime: Double
        let invalidated: Bool
        let ttl: Double?
        /// The body the entry was read with ("" when unknown): a row stored anew since is left alone.
        let body: String

        init(_ entry: CachedResponse, headers: String) {
            id = entry.id
            urlHash = SQLiteResponseCache.urlHash(entry.url)
            self.headers = headers
            status = entry.status
            requestTime = entry.requestTime.timeIntervalSince1970
            responseTime = entry.responseTime.timeIntervalSince1970
            invalidated = entry.invalidated
            ttl = entry.ttl
            body = entry.storageName
        }
    }

    // MARK: - Use of served entries

    public func didServe(_ entry: CachedResponse?, as use: RequestMetrics.CacheUse) {
        let full = state.withLock { s -> [Int64: Int]? in
            s.counts[use.index] += 1
            if let entry, use != .miss { s.served[entry.id, default: 0] += 1 }
            guard s.served.count >= Self.servedBatch else { return nil }
            defer { s.served = [:] }
            return s.served
        }
        // A million hits would hold a million ids until the end of the run: written in batches.
        if let full { Task { await self.touch(full) } }
    }

    /// Served entries held before their use is written (`touch`).
    static let servedBatch = 50_000

    /// Marks `served` entries used now, on the writer.
    func touch(_ served: [Int64: Int]) async {
        let now = Date().timeIntervalSince1970
        do {
            try await write { db in try SQLiteCacheRows.touch(served, at: now, in: db) }
        } catch {
            report(indexPath, "cannot record the response cache's use: \(error)")
        }
    }
}
