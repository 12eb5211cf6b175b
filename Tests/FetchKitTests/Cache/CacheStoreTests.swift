import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// The store meeting bad input: a corrupt or truncated index, bodies deleted or cut short by hand,
/// a cache directory it can't write. The run goes on without the cache for that entry, warns with
/// the path, fails no job, and never serves a torn entry.
@Suite struct CacheStoreTests {
    static let jobs = """
        settings: {output_dir: out}
        jobs:
          - {id: one, url: "${BASE}/cache/one?max_age=600&size=3000&fixed=1", save: one.json}
          - {id: two, url: "${BASE}/cache/two?max_age=600&size=3000&fixed=1", save: two.json}
        """

    func fixture() async throws -> CacheFixture {
        try CacheFixture(server: try await TestServer.start(), jobs: Self.jobs)
    }

    func bodyFiles(_ f: CacheFixture) -> [String] {
        (FileManager.default.enumerator(atPath: f.cacheDirectory + "/bodies")?.allObjects as? [String] ?? [])
            .filter { $0.count > 3 }.map { f.cacheDirectory + "/bodies/" + $0 }
    }

    @Test(arguments: ["garbage", "truncated"])
    func aCorruptIndexIsReplacedAndTheRunGoesOn(damage: String) async throws {
        let f = try await fixture()
        _ = try await f.run()
        let index = f.cacheDirectory + "/index.sqlite"
        // Make sure the WAL is folded into the main file before damaging it.
        try await SQLiteResponseCache(directory: f.cacheDirectory).pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: index + suffix) }
        if damage == "garbage" {
            try Data(repeating: 0x5a, count: 8192).write(to: URL(fileURLWithPath: index))
        } else {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: index))
            try handle.truncate(atOffset: 5000)
            try handle.close()
        }
        let second = try await f.run()
        #expect(second.summary.count(.succeeded) == 2, "no job fails because of the cache")
        #expect(second.events.problems.contains { $0.path == index && $0.message.contains("corrupt") }, "\(second.events.problems)")
        let third = try await f.run()
        #expect(third.summary.count(.cached) == 2, "the new index stores again")
        try await f.server.shutdown()
    }

    @Test(arguments: ["deleted", "cut short"])
    func aBodyDamagedByHandIsAMissNeverServed(damage: String) async throws {
        let f = try await fixture()
        let first = try await f.run()
        #expect(first.summary.count(.succeeded) == 2)
        let bodies = bodyFiles(f)
        #expect(bodies.count == 2)
        for body in bodies {
            if damage == "deleted" {
                try FileManager.default.removeItem(atPath: body)
            } else {
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: body))
                try handle.truncate(atOffset: 100)
                try handle.close()
            }
        }
        let second = try await f.run()
        #expect(second.summary.count(.succeeded) == 2)
        #expect(second.cacheUses("one") == [.miss])
        #expect(f.output("one.json")?.utf8.count == 3000, "the body came from the server again, whole")
        #expect(f.server.state.cacheServed("one") == 2)
        let third = try await f.run()
        #expect(third.cacheUses("one") == [.hit], "the damaged entry was replaced")
        #expect(f.output("one.json")?.utf8.count == 3000)
        try await f.server.shutdown()
    }

    @Test func aCacheThatCannotBeWrittenWarnsAndFailsNoJob() async throws {
        let f = try await fixture()
        // `bodies`, where every body goes (linked to a saved file or copied), is a file: putting a body
        // there fails (as root, too, unlike permissions).
        try FileManager.default.createDirectory(atPath: f.cacheDirectory, withIntermediateDirectories: true)
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: f.cacheDirectory + "/bodies"))
        let first = try await f.run()
        #expect(first.summary.count(.succeeded) == 2)
        #expect(first.events.problems.count == 1, "one warning, not one per job: \(first.events.problems)")
        #expect(first.events.problems.first?.path == f.cacheDirectory + "/bodies")
        let second = try await f.run()
        #expect(second.summary.count(.succeeded) == 2)
        #expect(second.summary.count(.cached) == 0, "nothing was stored")
        try await f.server.shutdown()
    }

    @Test func aCacheDirectoryThatIsAFileLeavesTheRunWithoutACache() async throws {
        let server = try await TestServer.start()
        let files = try ConfigFixture(["jobs.yaml": "version: 1\n" + Self.jobs.replacingOccurrences(of: "${BASE}", with: server.baseURL)])
        try FileManager.default.createDirectory(atPath: files.path(".fetchctl"), withIntermediateDirectories: true)
        try Data("in the way".utf8).write(to: URL(fileURLWithPath: files.path(".fetchctl/cache")))
        let log = files.path("run.log")
        var invocation = RunInvocation(jobsFile: files.path("jobs.yaml"))
        invocation.logFormat = .json
        invocation.logFile = log
        invocation.progress = .never
        let stderr = try LogWriter(path: files.path("stderr.txt"))
        let status = await invocation.perform(stdout: stderr, stderr: stderr)
        #expect(status == .success)
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        let warning = try #require(lines.first { $0.contains(#""event":"cache.warning""#) })
        #expect(warning.contains(#""message":"running without the response cache"#))
        #expect(!warning.contains(#""run_id":"""#), "logged after run.started, with its run_id")
        #expect(lines.firstIndex { $0.contains("run.started") }! < lines.firstIndex { $0.contains("cache.warning") }!)
        try await server.shutdown()
    }

    @Test func pruneRemovesOrphansAndOldEntries() async throws {
        let f = try await fixture()
        _ = try await f.run()
        let orphan = f.cacheDirectory + "/bodies/zz/orphan"
        try FileManager.default.createDirectory(atPath: f.cacheDirectory + "/bodies/zz", withIntermediateDirectories: true)
        try Data("left by a killed run".utf8).write(to: URL(fileURLWithPath: orphan))
        // A body a run sharing the cache is writing right now (no row yet) is not an orphan.
        let young = f.cacheDirectory + "/bodies/zz/being-written"
        try Data("a save in progress".utf8).write(to: URL(fileURLWithPath: young))
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: orphan)
        let cache = try SQLiteResponseCache(directory: f.cacheDirectory)
        let kept = await cache.prune(olderThan: 3600, sweep: true)
        #expect(FileManager.default.fileExists(atPath: young), "a body written in the last hour is kept")
        try FileManager.default.removeItem(atPath: young)
        #expect(kept == CachePruneResult(entries: 0, bytes: 0, orphans: 1))
        #expect(!FileManager.default.fileExists(atPath: orphan))
        let old = await cache.prune(olderThan: 0, sweep: true)
        #expect(old.entries == 2)
        #expect(old.bytes == 6000)
        #expect(bodyFiles(f).isEmpty)
        let stats = try await cache.statistics()
        #expect(stats.entries == 0)
        try await f.server.shutdown()
    }

    @Test func statisticsCountTheLastRun() async throws {
        let f = try await fixture()
        _ = try await f.run()
        _ = try await f.run()
        let cache = try SQLiteResponseCache(directory: f.cacheDirectory, readOnly: true)
        let stats = try await cache.statistics()
        #expect(stats.entries == 2)
        #expect(stats.bytes == 6000)
        let run = try #require(stats.lastRun)
        #expect((run.hits, run.revalidated, run.stale, run.misses) == (2, 0, 0, 0))
        #expect(run.hitRatio == 1)
        let listed = try await cache.list(urlPrefix: f.server.baseURL + "/cache/one")
        #expect(listed.map(\.hits) == [1])
        try await f.server.shutdown()
    }

    /// The stored headers' text and back: every field in order, repeated names, an empty value, a
    /// value with characters beyond ASCII and with colons, written straight into the string.
    @Test func storedHeadersComeBackAsTheyWere() {
        let headers = HTTPHeaders([("Content-Type", "text/plain; charset=utf-8"), ("ETag", "\"v1\""), ("X-Empty", ""),
                                   ("Content-Disposition", "attachment; filename=\"résumé.pdf\""), ("X-Time", "12:34:56")])
        var repeated = headers
        repeated.add(name: "Link", value: "<a>; rel=next")
        repeated.add(name: "Link", value: "<b>; rel=last")
        let text = SQLiteResponseCache.encode(repeated)
        #expect(text.hasPrefix("Content-Type: text/plain; charset=utf-8\nETag: \"v1\"\nX-Empty: \n"))
        let decoded = SQLiteResponseCache.decode(text)
        #expect(Array(decoded.map { [$0.name, $0.value] }) == Array(repeated.map { [$0.name, $0.value] }))
        #expect(SQLiteResponseCache.encode(HTTPHeaders()) == "")
    }
}
