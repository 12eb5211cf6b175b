import Foundation
import GRDB
import Testing
@testable import FetchKit

/// The state store's batched job results: every row of a batch of any size is written, field for
/// field, whatever mix of the multi-row statements carries it.
@Suite struct StateStoreTests {
    @Test(arguments: [1, 2, 63, 64, 65, 127, 200])
    func aBatchOfAnySizeIsWrittenWhole(size: Int) throws {
        let fixture = try ConfigFixture([:])
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        try store.beginRun(id: "run-1", jobsFile: "jobs.yaml", jobs: size)
        for n in 0..<size {
            let failed = n % 7 == 3
            store.recordJobLater(runID: "run-1", JobResult(job: "job[\(n)]", outcome: failed ? .failed : .succeeded, status: failed ? 503 : 200,
                                                           bytes: Int64(n * 10), attempts: 1 + n % 3,
                                                           error: failed ? FetchError(.status, "status \(n)") : nil,
                                                           duration: .milliseconds(n)))
        }
        try store.flush()
        let records = try store.lastResults()
        #expect(records.count == size)
        for record in records {
            let n = try #require(Int(record.job.dropFirst(4).dropLast()))
            let failed = n % 7 == 3
            #expect(record.outcome == (failed ? "failed" : "succeeded"))
            #expect(record.status == (failed ? 503 : 200))
            #expect(record.bytes == Int64(n * 10) && record.attempts == 1 + n % 3 && record.durationMilliseconds == Int64(n))
            #expect(record.error == (failed ? "status" : nil) && record.message == (failed ? "status \(n)" : nil))
        }
    }

    /// `checkpoint` (made at the end of `fetchctl run`, beside the cache's last commit) copies every
    /// frame of the write-ahead log into the database file when no one else reads the store: closing
    /// it then has nothing left to copy.
    @Test func aCheckpointMovesTheResultsIntoTheDatabaseFile() throws {
        let fixture = try ConfigFixture([:])
        let directory = fixture.path(".fetchctl")
        let store = try StateStore(directory: directory)
        try store.beginRun(id: "run-1", jobsFile: "jobs.yaml", jobs: 300)
        for n in 0..<300 {
            store.recordJobLater(runID: "run-1", JobResult(job: "job[\(n)]", outcome: .succeeded, status: 200, bytes: 1, attempts: 1, duration: .milliseconds(1)))
        }
        try store.flush()
        let database = directory + "/state.sqlite"
        let before = try #require(try FileManager.default.attributesOfItem(atPath: database)[.size] as? Int)
        let (frames, copied) = try store.checkpoint()
        #expect(frames > 0 && copied == frames, "every frame of the log copied: \(copied) of \(frames)")
        let after = try #require(try FileManager.default.attributesOfItem(atPath: database)[.size] as? Int)
        #expect(after > before, "the results are in the database file: \(before) → \(after) bytes")
        #expect(try store.lastResults().count == 300)
    }

    /// `closeForExit` (the end of `fetchctl run`) closes the store as its release did: the log is
    /// copied in and removed, the results are there for the next opening, and the closed writer is
    /// kept (`ExitRetained`) rather than torn down.
    @Test func aStoreClosedForExitLeavesItsResultsAndNoLog() throws {
        let fixture = try ConfigFixture([:])
        let directory = fixture.path(".fetchctl")
        let kept = ExitRetained.count
        do {
            let store = try StateStore(directory: directory)
            try store.beginRun(id: "run-1", jobsFile: "jobs.yaml", jobs: 70)
            for n in 0..<70 {
                store.recordJobLater(runID: "run-1", JobResult(job: "job[\(n)]", outcome: .succeeded, status: 200, bytes: 1, attempts: 1, duration: .milliseconds(1)))
            }
            try store.flush()
            #expect(FileManager.default.fileExists(atPath: directory + "/state.sqlite-wal"))
            store.closeForExit()
            #expect(ExitRetained.count > kept, "the closed writer is kept")
            #expect(!FileManager.default.fileExists(atPath: directory + "/state.sqlite-wal"), "closing copied the log in and removed it")
        }
        #expect(try StateStore(directory: directory).lastResults().count == 70)
    }

    /// One row a job: a run's result replaces the job's last one, and `status --jobs` lists the
    /// latest. A job that has not run for `keptRuns` runs is forgotten; one that runs every time
    /// is not.
    @Test func aJobsResultReplacesItsLastOneAndOldJobsAreForgotten() throws {
        let fixture = try ConfigFixture([:])
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        let started = Date(timeIntervalSince1970: 1_800_000_000)
        func run(_ number: Int, jobs: [String]) throws {
            try store.beginRun(id: "run-\(number)", jobsFile: "jobs.yaml", jobs: jobs.count, at: started + Double(number))
            for job in jobs {
                store.recordJobLater(runID: "run-\(number)", JobResult(job: job, outcome: number.isMultiple(of: 2) ? .failed : .succeeded,
                                                                      status: 200 + number, bytes: Int64(number), attempts: 1, duration: .milliseconds(number)))
            }
            try store.flush()
        }
        try run(1, jobs: ["once", "always"])
        try run(2, jobs: ["always"])
        var records = try store.lastResults()
        #expect(records.map(\.job) == ["always", "once"])
        #expect(records.map(\.runID) == ["run-2", "run-1"] && records.map(\.status) == [202, 201] && records.map(\.outcome) == ["failed", "succeeded"])
        for number in 3...StateStore.keptRuns { try run(number, jobs: ["always"]) }
        #expect(try store.lastResults().map(\.job) == ["always", "once"], "run-1 is still one of the last \(StateStore.keptRuns) runs")
        try run(StateStore.keptRuns + 1, jobs: ["always"])
        records = try store.lastResults()
        #expect(records.map(\.job) == ["always"], "run-1 fell out of the kept runs, and with it the job that ran only then")
        #expect(records.first?.runID == "run-\(StateStore.keptRuns + 1)")
        #expect(try store.recentRuns(limit: 100).count == StateStore.keptRuns + 1, "every run keeps its counts")
    }

    /// The prune at each run's start reads the last runs from `runs_by_start` rather than sorting
    /// every run the store has kept (100,000 for a cron job every five minutes for a year), and a
    /// store made before the index gets it when migrated.
    @Test func thePruneFindsTheLastRunsThroughTheirIndex() throws {
        let fixture = try ConfigFixture([:])
        let directory = fixture.path("old")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try StateStore.migrator.migrate(try DatabaseQueue(path: directory + "/state.sqlite"), upTo: "v6: job_results, one row a job")
        let store = try StateStore(directory: directory)
        try store.beginRun(id: "r1", jobsFile: "jobs.yaml", jobs: 0)
        let plan = try DatabaseQueue(path: directory + "/state.sqlite").read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + StateStore.pruneSQL, arguments: [StateStore.keptRuns]).map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("runs USING INDEX runs_by_start") }, "\(plan)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "no sort of every run: \(plan)")
    }

    /// A store made before job results were one row a job keeps each job's latest result (the
    /// highest row id) when migrated.
    @Test func theMigrationKeepsEachJobsLatestResult() throws {
        let fixture = try ConfigFixture([:])
        let directory = fixture.path("old")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: directory + "/state.sqlite")
        try StateStore.migrator.migrate(queue, upTo: "v5: pagination_progress, incremental_cursors")
        try queue.write { db in
            try db.execute(sql: "INSERT INTO runs (id, jobs_file, started_at, jobs) VALUES ('r1', 'j', 1, 2), ('r2', 'j', 2, 2)")
            for (run, job, status) in [("r1", "a", 500), ("r1", "b", 200), ("r2", "a", 200), ("r2", "b", 404)] {
                try db.execute(sql: """
                    INSERT INTO job_results (run_id, job, outcome, status, bytes, attempts, duration_ms, finished_at)
                    VALUES (?, ?, ?, ?, 1, 1, 1, 1)
                    """, arguments: [run, job, status == 200 ? "succeeded" : "failed", status])
            }
        }
        try queue.close()
        let store = try StateStore(directory: directory)
        let records = try store.lastResults()
        #expect(records.map(\.job) == ["a", "b"])
        #expect(records.map(\.runID) == ["r2", "r2"] && records.map(\.status) == [200, 404])
    }

    /// Every schema object as SQLite keeps it (its type, name, table and SQL text, in which
    /// `ALTER TABLE` has added its columns), and the migrations recorded as applied. SQLite's own
    /// tables are left out: `sqlite_sequence`, made for the first migrations' AUTOINCREMENT, stays
    /// in a migrated store after the table that needed it is gone (SQLite won't drop it).
    func describe(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            let objects = try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name != 'grdb_migrations' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
                .map { "\($0["type"] as String) \($0["name"] as String) on \($0["tbl_name"] as String): \($0["sql"] as String? ?? "-")" }
            return objects + ["applied \(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier"))"]
        }
    }

    /// A new store is written in one step (`SchemaCreation`); it must be what the migrations make,
    /// and opening it again must find nothing left to migrate.
    @Test func aNewStoreHasTheSchemaTheMigrationsMake() throws {
        let fixture = try ConfigFixture([:])
        let fresh = fixture.path("fresh")
        _ = try StateStore(directory: fresh)
        let migrated = fixture.path("migrated")
        try FileManager.default.createDirectory(atPath: migrated, withIntermediateDirectories: true)
        try StateStore.migrator.migrate(try DatabaseQueue(path: migrated + "/state.sqlite"))
        let made = try describe(fresh + "/state.sqlite")
        let migratedSchema = try describe(migrated + "/state.sqlite")
        #expect(made == migratedSchema, "\(made)\n\(migratedSchema)")
        #expect(made.contains { $0.hasPrefix("table job_results on job_results: ") && $0.contains("REFERENCES \"runs\"(\"id\") ON DELETE CASCADE") }, "\(made)")
        #expect(made.last == "applied \(StateStore.migrator.migrations.sorted())")
        _ = try StateStore(directory: fresh)
        #expect(try describe(fresh + "/state.sqlite") == made)
    }

    /// A store made by an older fetchctl (here, at the first migration) is migrated when opened.
    @Test func aStoreFromBeforeTheLaterMigrationsIsMigrated() throws {
        let fixture = try ConfigFixture([:])
        let old = fixture.path("old")
        try FileManager.default.createDirectory(atPath: old, withIntermediateDirectories: true)
        let first = try #require(StateStore.migrator.migrations.first)
        try StateStore.migrator.migrate(try DatabaseQueue(path: old + "/state.sqlite"), upTo: first)
        let store = try StateStore(directory: old)
        try store.beginRun(id: "run-1", jobsFile: "jobs.yaml", jobs: 1)
        let migrated = fixture.path("migrated")
        try FileManager.default.createDirectory(atPath: migrated, withIntermediateDirectories: true)
        try StateStore.migrator.migrate(try DatabaseQueue(path: migrated + "/state.sqlite"))
        #expect(try describe(old + "/state.sqlite") == (try describe(migrated + "/state.sqlite")))
    }
}
