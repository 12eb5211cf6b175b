import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import Testing
import FetchKitTesting
@testable import FetchKit

/// The response cache as `fetchctl run` opens it (`batchesStores`): rows are inserted in steps into
/// a transaction left open on the writer and committed on a timer, at a full batch, before any
/// other write, and when the run finishes. Another connection to the same file (another process)
/// sees each step's rows only once they are committed.
@Suite struct BatchedStoreTests {
    static func entry(_ number: Int) -> CachedResponse {
        CachedResponse(method: .get, url: "http://127.0.0.1:9/batched/\(number)", status: 200,
                       headers: HTTPHeaders([("Content-Type", "text/plain"), ("Cache-Control", "max-age=3600")]),
                       requestTime: Date(), responseTime: Date(), ttl: 3600)
    }

    /// A batching cache whose timer never commits during the test: what is visible when is then
    /// up to the steps and writes alone.
    static func cache(_ directory: String) throws -> SQLiteResponseCache {
        let cache = try SQLiteResponseCache(directory: directory, batchesStores: true)
        cache.state.withLock { $0.commitInterval = .seconds(3600) }
        return cache
    }

    static func store(_ number: Int, in cache: SQLiteResponseCache) async throws {
        let writer = try #require(cache.makeBodyWriter())
        try writer.write(ByteBuffer(string: "body \(number)"))
        try writer.complete()
        await cache.store(entry(number), body: writer)
    }

    /// How many of `urls` another connection finds, reading the index as another process would.
    static func committed(_ urls: [String], in directory: String) async throws -> Int {
        let reader = try SQLiteResponseCache(directory: directory, readOnly: true)
        var found = 0
        for url in urls where await !reader.entries(method: .get, url: url).isEmpty { found += 1 }
        return found
    }

    /// Which of `numbers` another connection finds, reading the index as another process would.
    static func visible(_ numbers: Range<Int>, in directory: String) async throws -> [Int] {
        let reader = try SQLiteResponseCache(directory: directory, readOnly: true)
        var found: [Int] = []
        for number in numbers where await !reader.entries(method: .get, url: entry(number).url).isEmpty { found.append(number) }
        return found
    }

    /// A URL stored again in the same batch of rows: the later row replaces the earlier one, and
    /// the earlier one's body file goes once that is committed (rows are upserted many to a
    /// statement; the one a row replaces must be in the index before the row looks for it).
    @Test func aURLStoredTwiceInOneBatchLeavesOneBody() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try Self.cache(directory)
        for number in [1, 2, 1, 3, 1] { try await Self.store(number, in: cache) }
        await cache.finishRun(id: "run-1", maxSize: nil)
        let bodies = (FileManager.default.enumerator(atPath: directory + "/bodies")?.allObjects as? [String] ?? [])
            .filter { !((try? FileManager.default.attributesOfItem(atPath: directory + "/bodies/" + $0)[.type] as? FileAttributeType) == .typeDirectory) }
        #expect(bodies.count == 3, "\(bodies)")
        #expect(try await Self.visible(1..<4, in: directory) == [1, 2, 3])
        // The bound on the bodies' bytes counts each kept body once ("body N": 6 bytes each).
        let bound = try await cache.pool.read { db in try SQLiteCacheRows.BodyBytes.bound(in: db) }
        #expect(bound == 18)
    }

    /// More rows than one statement takes, with stored-again URLs among them: every URL ends with
    /// one row and one body, the latest.
    @Test func aLongBatchWithRepeatsKeepsTheLatestOfEachURL() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try Self.cache(directory)
        let numbers = Array(0..<45) + [3, 40, 7] + Array(45..<90) + [3]
        for number in numbers { try await Self.store(number, in: cache) }
        await cache.finishRun(id: "run-1", maxSize: nil)
        let rows = try await cache.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM responses") }
        #expect(rows == 90)
        #expect(try await Self.visible(0..<90, in: directory) == Array(0..<90))
        let bound = try await cache.pool.read { db in try SQLiteCacheRows.BodyBytes.bound(in: db) }
        let expected = (0..<90).reduce(0) { $0 + "body \($1)".utf8.count }
        #expect(bound == Int64(expected))
    }

    /// A batch of rows bound in place, each from its own strings and the digest's hex written on
    /// the stack (`SQLiteCacheRows.insert`): every row must come back with its own values.
    @Test func rowsUpsertedManyToAStatementKeepTheirOwnValues() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try Self.cache(directory)
        for number in 0..<37 {
            let writer = try #require(cache.makeBodyWriter())
            try writer.write(ByteBuffer(string: String(repeating: "x", count: number)))
            try writer.complete()
            var entry = Self.entry(number)
            entry.status = 200 + number
            entry.headers = HTTPHeaders([("ETag", "\"\(number)\""), ("Content-Type", "text/plain")])
            entry.varyNames = number % 2 == 0 ? nil : ["accept"]
            entry.varyKey = number % 2 == 0 ? "" : "key-\(number)"
            entry.ttl = number % 3 == 0 ? nil : Double(number)
            entry.requestTime = Date(timeIntervalSince1970: 1_800_000_000 + Double(number))
            await cache.store(entry, body: writer)
        }
        await cache.finishRun(id: "run-1", maxSize: nil)
        let reader = try SQLiteResponseCache(directory: directory, readOnly: true)
        for number in 0..<37 {
            let found = await reader.entries(method: .get, url: Self.entry(number).url)
            let entry = try #require(found.first, "\(number)")
            #expect(found.count == 1)
            #expect(entry.status == 200 + number)
            #expect(entry.headers.value(for: "ETag") == "\"\(number)\"")
            #expect(entry.varyNames == (number % 2 == 0 ? nil : ["accept"]))
            #expect(entry.varyKey == (number % 2 == 0 ? "" : "key-\(number)"))
            #expect(entry.ttl == (number % 3 == 0 ? nil : Double(number)))
            #expect(entry.requestTime == Date(timeIntervalSince1970: 1_800_000_000 + Double(number)))
            #expect(entry.bodySize == Int64(number))
            var body = ""
            try await reader.readBody(of: entry) { body += String(buffer: $0) }
            #expect(body == String(repeating: "x", count: number))
        }
    }

    @Test func stepsInsertCommitsPublishAndEveryRowEndsCommittedWithItsBody() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try Self.cache(directory)
        let rows = SQLiteResponseCache.stepRows + 8
        for number in 0..<rows { try await Self.store(number, in: cache) }
        // The step queued at `stepRows` rows has inserted them into the open transaction: not
        // committed, so another connection finds none of them.
        await cache.state.withLock { $0.lastWrite }?.value
        #expect(cache.state.withLock { $0.inserted.count } == SQLiteResponseCache.stepRows)
        #expect(try await Self.visible(0..<rows, in: directory).isEmpty)

        // A write of another kind (pruning, here) commits the step's rows first; the rows stored
        // since wait for the next step or commit.
        _ = await cache.prune(maxSize: 1 << 40)
        #expect(cache.state.withLock { $0.inserted.isEmpty })
        #expect(try await Self.visible(0..<rows, in: directory) == Array(0..<SQLiteResponseCache.stepRows))

        // The end of the run commits the rest; each row's body is the one stored with it.
        await cache.finishRun(id: "run-1", maxSize: nil)
        #expect(try await Self.visible(0..<rows, in: directory) == Array(0..<rows))
        #expect(cache.state.withLock { $0.uncommitted.isEmpty && $0.lastWrite == nil })
        let reader = try SQLiteResponseCache(directory: directory, readOnly: true)
        for number in [0, SQLiteResponseCache.stepRows, rows - 1] {
            let stored = try #require(await reader.entries(method: .get, url: Self.entry(number).url).first)
            var body = ""
            try await reader.readBody(of: stored) { body += String(buffer: $0) }
            #expect(body == "body \(number)")
        }
    }

    /// The writer's page cache follows the index's size (`WriterPageCache`): 2 MiB for a new
    /// index, grown by a MiB once its rows need it (32 bytes a row), never past 16 MiB; an index
    /// opened again starts at its rows' size.
    @Test func theWritersPageCacheGrowsWithTheIndex() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        func setting(_ cache: SQLiteResponseCache) throws -> Int {
            try cache.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") } ?? 0
        }
        let cache = try Self.cache(directory)
        #expect(try setting(cache) == -2048)
        // As if the index held 32 rows short of a MiB's worth: one step's rows cross it.
        cache.state.withLock { $0.indexRows = 1024 * 32 - SQLiteResponseCache.stepRows }
        for number in 0..<SQLiteResponseCache.stepRows { try await Self.store(number, in: cache) }
        await cache.state.withLock { $0.lastWrite }?.value
        #expect(try setting(cache) == -3072)
        // Fewer than a MiB's worth more: no change.
        for number in 100..<(100 + SQLiteResponseCache.stepRows) { try await Self.store(number, in: cache) }
        await cache.state.withLock { $0.lastWrite }?.value
        #expect(try setting(cache) == -3072)
        // Ten million rows: the most.
        cache.state.withLock { $0.indexRows = 10_000_000 }
        for number in 200..<(200 + SQLiteResponseCache.stepRows) { try await Self.store(number, in: cache) }
        await cache.state.withLock { $0.lastWrite }?.value
        #expect(try setting(cache) == -16384)
        await cache.finishRun(id: "run-1", maxSize: nil)

        let reopened = try SQLiteResponseCache(directory: directory, batchesStores: true)
        #expect(try setting(reopened) == -(2048 + 3 * SQLiteResponseCache.stepRows / 32))
    }

    @Test func aLookupOfARowInTheOpenTransactionWaitsForItsCommit() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try Self.cache(directory)
        for number in 0..<SQLiteResponseCache.stepRows { try await Self.store(number, in: cache) }
        await cache.state.withLock { $0.lastWrite }?.value
        #expect(cache.state.withLock { $0.inserted.count } == SQLiteResponseCache.stepRows)
        // Found by this process (the lookup commits first), and from then on by every other.
        #expect(await cache.entries(method: .get, url: Self.entry(5).url).count == 1)
        #expect(try await Self.visible(0..<SQLiteResponseCache.stepRows, in: directory).count == SQLiteResponseCache.stepRows)
        await cache.finishRun(id: "run-1", maxSize: nil)
    }

    /// A revalidated response's new headers (`update` after a `304`) go with the next batch write,
    /// not a transaction of their own: another connection sees them once committed, this process's
    /// next lookup of the URL at once (it commits first), and an update of a row stored anew since
    /// it was read changes nothing.
    @Test func aRevalidatedResponsesHeadersAreWrittenWithTheBatch() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try Self.cache(directory)
        for number in 0..<3 { try await Self.store(number, in: cache) }
        await cache.finishRun(id: "run-1", maxSize: nil)
        func etag(_ number: Int, in cache: SQLiteResponseCache) async throws -> String? {
            try #require(await cache.entries(method: .get, url: Self.entry(number).url).first).headers["ETag"]
        }

        var freshened = try #require(await cache.entries(method: .get, url: Self.entry(0).url).first)
        freshened.headers.update(name: "ETag", value: "\"v2\"")
        await cache.update(freshened)
        #expect(cache.state.withLock { $0.deferredUpdates.count } == 1)
        #expect(try await etag(0, in: SQLiteResponseCache(directory: directory, readOnly: true)) == nil)
        #expect(try await etag(0, in: cache) == "\"v2\"")
        #expect(try await etag(0, in: SQLiteResponseCache(directory: directory, readOnly: true)) == "\"v2\"")

        // Entry 1 as read before it was stored again: its update must not land on the new row.
        var stale = try #require(await cache.entries(method: .get, url: Self.entry(1).url).first)
        try await Self.store(1, in: cache)
        stale.headers.update(name: "ETag", value: "\"stale\"")
        await cache.update(stale)
        // A step's worth of updates is written without the timer or a lookup (a lookup of entry 2
        // would commit the ones before it).
        var again = try #require(await cache.entries(method: .get, url: Self.entry(2).url).first)
        for version in 0..<SQLiteResponseCache.stepRows {
            again.headers.update(name: "ETag", value: "\"v\(version)\"")
            await cache.update(again)
        }
        await cache.state.withLock { $0.lastWrite }?.value
        // A step wrote them into the open transaction: not committed, so another connection
        // doesn't see them yet.
        #expect(cache.state.withLock { $0.updated.count } >= SQLiteResponseCache.stepRows - 1)
        #expect(try await etag(2, in: SQLiteResponseCache(directory: directory, readOnly: true)) == nil)
        await cache.finishRun(id: "run-2", maxSize: nil)
        let reader = try SQLiteResponseCache(directory: directory, readOnly: true)
        #expect(try await etag(1, in: reader) == nil)
        #expect(try await etag(2, in: reader) == "\"v\(SQLiteResponseCache.stepRows - 1)\"")
        #expect(cache.state.withLock { $0.uncommitted.isEmpty && $0.updated.isEmpty })
    }

    @Test func aFullBatchQueuesOneCommitNotOnePerRowAfterIt() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try Self.cache(directory)
        cache.state.withLock { $0.commitRows = 40 }
        let rows = 200
        for number in 0..<rows { try await Self.store(number, in: cache) }
        await cache.state.withLock { $0.lastWrite }?.value
        // A step per 32 rows at most, a commit per 40, whatever the writer's pace: rows stored
        // while a full batch's commit waits for the writer must not each queue a commit of their own.
        let writes = cache.state.withLock { $0.writes }
        #expect(writes <= rows / SQLiteResponseCache.stepRows + rows / 40 + 1, "\(writes) batch writes for \(rows) rows")
        // Every full batch was committed without the timer.
        #expect(try await Self.visible(0..<160, in: directory).count == 160)
        await cache.finishRun(id: "run-1", maxSize: nil)
        #expect(try await Self.visible(0..<rows, in: directory).count == rows)
    }

    /// `max_size` at the end of a run, after its last rows are committed: over it, least recently
    /// used entries go; under it, none.
    @Test(arguments: [(maxSize: Int64(2_000), pruned: true), (maxSize: Int64(1 << 20), pruned: false)])
    func theEndOfARunPrunesToMaxSize(maxSize: Int64, pruned: Bool) async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try Self.cache(directory)
        let rows = 50
        for number in 0..<rows {
            let writer = try #require(cache.makeBodyWriter())
            try writer.write(ByteBuffer(string: String(repeating: "x", count: 100)))
            try writer.complete()
            await cache.store(Self.entry(number), body: writer)
        }
        await cache.finishRun(id: "run-1", maxSize: maxSize)
        let kept = try await Self.visible(0..<rows, in: directory).count
        if pruned {
            #expect(kept >= 1 && kept <= 20, "\(kept) of \(rows) 100-byte entries kept under 2,000 bytes")
        } else {
            #expect(kept == rows)
        }
        #expect(cache.state.withLock { $0.uncommitted.isEmpty })
    }

    /// The bodies' size bound (`SQLiteCacheRows.BodyBytes`) that spares the end of a run summing
    /// every row: it follows stores and the rows they replace, stays above the real total when
    /// rows go, and a prune that has to sum sets it to the total. A cache over `max_size` is
    /// pruned whatever the bound said last.
    @Test func theBodiesSizeBoundFollowsStoresAndNeverFallsBelowTheTotal() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try Self.cache(directory)
        func storeBody(_ number: Int, bytes: Int) async throws {
            let writer = try #require(cache.makeBodyWriter())
            try writer.write(ByteBuffer(string: String(repeating: "x", count: bytes)))
            try writer.complete()
            await cache.store(Self.entry(number), body: writer)
        }
        func bound() async throws -> Int64? { try await cache.pool.read { db in try SQLiteCacheRows.BodyBytes.bound(in: db) } }
        func total() async throws -> Int64 {
            try await cache.pool.read { db in try Int64.fetchOne(db, sql: "SELECT SUM(body_size) FROM responses") ?? 0 }
        }
        for number in 0..<3 { try await storeBody(number, bytes: 100) }
        await cache.finishRun(id: "run-1", maxSize: 1 << 20)
        #expect(try await bound() == 300)
        // Stored again, larger: the replaced row's size is taken off.
        try await storeBody(1, bytes: 250)
        await cache.finishRun(id: "run-2", maxSize: 1 << 20)
        #expect(try await total() == 450)
        #expect(try await bound() == 450)
        // A row that goes (an invalidation) leaves the bound above the total.
        await cache.invalidate(url: Self.entry(0).url)
        #expect(try await total() == 350)
        #expect(try await bound() == 450)
        // A max size between the two: the rows are summed, nothing goes, and the bound is the total.
        await cache.finishRun(id: "run-3", maxSize: 400)
        #expect(try await Self.visible(0..<3, in: directory) == [1, 2])
        #expect(try await bound() == 350)
        // Over it: the least recently used go, and the bound follows.
        await cache.finishRun(id: "run-4", maxSize: 300)
        #expect(try await total() <= 300)
        #expect(try await bound() == total())
    }

    @Test func anInvalidationRemovesARowWaitingInTheOpenTransaction() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try Self.cache(directory)
        for number in 0..<SQLiteResponseCache.stepRows { try await Self.store(number, in: cache) }
        await cache.state.withLock { $0.lastWrite }?.value
        await cache.invalidate(url: Self.entry(7).url)
        await cache.finishRun(id: "run-1", maxSize: nil)
        let visible = try await Self.visible(0..<SQLiteResponseCache.stepRows, in: directory)
        #expect(visible == Array(0..<SQLiteResponseCache.stepRows).filter { $0 != 7 })
        // Its body went with it: one body file per row left.
        let bodies = try FileManager.default.subpathsOfDirectory(atPath: directory + "/bodies")
            .filter { !$0.hasSuffix("/") && (try? FileManager.default.attributesOfItem(atPath: directory + "/bodies/" + $0)[.type] as? FileAttributeType) == .typeRegular }
        #expect(bodies.count == SQLiteResponseCache.stepRows - 1)
    }

    /// Once nothing is left to start, the runner has the cache commit what it stored so far: the
    /// run's last commit, after the last response, then holds only the last jobs' rows. Here one
    /// worker waits for the first job, whose response the server holds until the test has looked
    /// (and sends the request that lets it go), while the other runs the four others and then
    /// finds nothing left to start; the cache's timer never commits.
    @Test func whatIsStoredIsCommittedWhileTheLastJobsRun() async throws {
        let server = try await TestServer.start()
        let (run, cache) = try Self.startRun("""
              - {id: held, url: "${BASE}/delay/60000?until_requests=6", save: held.txt}
              - {id: fast, url: "${BASE}/cache/k{{matrix.n}}?max_age=3600", matrix: {n: [0, 1, 2, 3]}, save: "{{matrix.n}}.txt"}
            """, on: server)
        // The four fast jobs' rows become visible to another connection while the fifth job waits.
        let urls = (0..<4).map { "\(server.baseURL)/cache/k\($0)?max_age=3600" }
        #expect(try await Self.whenCommitted(urls, in: cache.directory) == 4)
        #expect(server.state.requests.filter { $0.path.hasPrefix("/delay/") }.count == 1, "the held job has not been answered")
        // The sixth request lets the held one go.
        let summary = try await Self.finish(run, cache: cache, releasing: server)
        #expect(summary.tally.jobs == 5 && summary.tally.unsuccessful == 0)
        try await server.shutdown()
    }

    /// A few jobs before the end (`max(4 × concurrency, jobs / 32)` left to start) the runner has
    /// the cache commit too, so that the commit at the end holds only the last jobs' rows and the
    /// one when nothing is left to start is over before the last response. Here both workers end
    /// up waiting on held jobs, the second taken when 8 jobs are left: the twelve fast jobs' rows
    /// must be visible to another connection then, with 8 jobs still to start (no drain yet) and
    /// the cache's timer off.
    @Test func whatIsStoredIsCommittedAFewJobsBeforeTheEnd() async throws {
        let server = try await TestServer.start()
        let (run, cache) = try Self.startRun("""
              - {id: first, url: "${BASE}/delay/60000?until_requests=15", save: first.txt}
              - {id: fast, url: "${BASE}/cache/f{{matrix.n}}?max_age=3600", matrix: {n: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}, save: "f{{matrix.n}}.txt"}
              - {id: second, url: "${BASE}/delay/60000?until_requests=15", save: second.txt}
              - {id: last, url: "${BASE}/cache/g{{matrix.n}}?max_age=3600", matrix: {n: [0, 1, 2, 3, 4, 5, 6, 7]}, save: "g{{matrix.n}}.txt"}
            """, on: server)
        let urls = (0..<12).map { "\(server.baseURL)/cache/f\($0)?max_age=3600" }
        #expect(try await Self.whenCommitted(urls, in: cache.directory) == 12)
        #expect(server.state.requests.count == 14, "both held jobs are waiting and no job after them has started")
        // The fifteenth request lets both held jobs go.
        let summary = try await Self.finish(run, cache: cache, releasing: server)
        #expect(summary.tally.jobs == 22 && summary.tally.unsuccessful == 0)
        try await server.shutdown()
    }

    /// Starts a run of `jobs` (a jobs file's list; `${BASE}` is `server`) with two workers and the
    /// batching cache whose timer never commits.
    static func startRun(_ jobs: String, on server: TestServer) throws -> (run: Task<RunSummary, Never>, cache: SQLiteResponseCache) {
        let files = try ConfigFixture(["jobs.yaml": """
            version: 1
            settings: {concurrency: 2, per_host: 2, output_dir: out}
            jobs:

            """ + jobs])
        let config = files.load("jobs.yaml", environment: ["BASE": server.baseURL], mode: .run)
        let plan = try RunPlan(config: config, selecting: [])
        let cache = try Self.cache(files.path(".fetchctl/cache"))
        let runner = Runner(config: config, plan: plan, options: Runner.Options(concurrency: 2, responseCache: cache))
        return (Task { await runner.run() }, cache)
    }

    /// How many of `urls` another connection finds, once it finds them all (or after 30 s).
    static func whenCommitted(_ urls: [String], in directory: String) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(30)
        while try await committed(urls, in: directory) < urls.count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await committed(urls, in: directory)
    }

    /// Sends the request that lets the server's held responses go, and ends the run.
    static func finish(_ run: Task<RunSummary, Never>, cache: SQLiteResponseCache, releasing server: TestServer) async throws -> RunSummary {
        _ = try await URLSession(configuration: .ephemeral).data(from: URL(string: server.baseURL + "/status/200")!)
        let summary = await run.value
        await cache.finishRun(id: summary.runID, maxSize: nil)
        return summary
    }
}
