import Foundation
import GRDB

/// The run state in `state_dir/state.sqlite` (SPEC §5): runs, each job's result, and download
/// records (validators, length, completion). SQLite in WAL mode with versioned migrations; every
/// change is one transaction, so a `kill -9` at any moment leaves a consistent store. Nothing in it
/// is needed for a fresh run to be correct: deleting `state_dir` loses history, never data.
public final class StateStore: Sendable {
    public let directory: String
    let pool: StoreConnections
    /// Job results waiting for the writer (see `recordJobLater`).
    private let queuedResults = LockedBox<(results: [JobResultRows.Row], scheduled: Bool)>(([], false))

    /// Opens (creating if needed) the store in `directory` and brings its schema up to date.
    public convenience init(directory: String) throws {
        try self.init(directory: directory, template: PackageResources.state_sqlite)
    }

    /// With `template` nil, a new store is made with SQL (`SchemaCreation`) rather than from its
    /// template: what `StoreTemplateTests` writes the template from.
    init(directory: String, template: [UInt8]?) throws {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let path = (directory as NSString).appendingPathComponent("state.sqlite")
            // A new store from its template (`StoreTemplate`): nothing left to create or migrate.
            let made = template.map { StoreTemplate.create(at: path, from: $0) } ?? false
            var configuration = SQLiteC.configuration()
            configuration.busyMode = .timeout(5)
            // WAL with synchronous=NORMAL: a commit survives the process dying at any moment (kill -9);
            // only a power loss may drop the last commits, never corrupt the store.
            // 16 MiB of pages: job results' index takes a million ids in no particular order (bench/scale.sh).
            // Temporary tables and statement journals in memory: deleting the job results of the
            // run that fell out of `keptRuns` wrote its statement journal to a file in /var/tmp
            // (7 MB for a 20,000-job run).
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY") }
            // No foreign-key enforcement: the one reference, a job result's run, is written by this
            // store in order (`beginRun` before any result), and runs are never deleted, so the check
            // SQLite made on every inserted result (a lookup in `runs`) could never fail.
            configuration.foreignKeysEnabled = false
            pool = try StoreConnections(path: path, configuration: configuration)
            if !made { try SchemaCreation.prepare(pool, schema: Self.currentSchema, marker: "runs", migrator: Self.migrator) }
        } catch let error as FetchError {
            throw error
        } catch {
            throw FetchError(.io, "cannot open the state store in '\(directory)': \(error)")
        }
    }

    /// The schema the migrations below make, written at once into a new store (`SchemaCreation`:
    /// the migrations were 9.3 of the 13.9 million instructions of making one): SQLite's own text
    /// of each table after them, columns added by `ALTER TABLE` included. `StateStoreTests` checks
    /// that the two agree, statement by statement.
    static let currentSchema = """
        CREATE TABLE "runs" ("id" TEXT PRIMARY KEY NOT NULL, "jobs_file" TEXT NOT NULL, "started_at" DOUBLE NOT NULL, "ended_at" DOUBLE, "jobs" INTEGER NOT NULL, "succeeded" INTEGER, "failed" INTEGER, "skipped" INTEGER, "up_to_date" INTEGER, "bytes" INTEGER, "exit_code" INTEGER, "cached" INTEGER, "errors" TEXT, "first_failures" TEXT);
        CREATE TABLE "job_results" ("run_id" TEXT NOT NULL REFERENCES "runs"("id") ON DELETE CASCADE, "job" TEXT PRIMARY KEY NOT NULL, "outcome" TEXT NOT NULL, "status" INTEGER, "bytes" INTEGER NOT NULL, "attempts" INTEGER NOT NULL, "error" TEXT, "message" TEXT, "duration_ms" INTEGER NOT NULL, "finished_at" DOUBLE NOT NULL) WITHOUT ROWID;
        CREATE TABLE "downloads" ("destination" TEXT PRIMARY KEY NOT NULL, "url" TEXT NOT NULL, "etag" TEXT, "last_modified" TEXT, "total_length" INTEGER, "completed" BOOLEAN NOT NULL DEFAULT 0, "checksum" TEXT, "updated_at" DOUBLE NOT NULL, "date" TEXT);
        CREATE TABLE "download_segments" ("destination" TEXT NOT NULL, "idx" INTEGER NOT NULL, "start" INTEGER NOT NULL, "end" INTEGER NOT NULL, "done" INTEGER NOT NULL, PRIMARY KEY ("destination", "idx"));
        CREATE TABLE "incremental_cursors" ("job" TEXT PRIMARY KEY NOT NULL, "cursor" TEXT NOT NULL, "updated_at" DOUBLE NOT NULL, "run_id" TEXT NOT NULL);
        CREATE TABLE "pagination_progress" ("job" TEXT PRIMARY KEY NOT NULL, "fingerprint" TEXT NOT NULL, "page" INTEGER NOT NULL, "next" TEXT NOT NULL, "records" INTEGER NOT NULL, "items_bytes" INTEGER NOT NULL, "bytes" INTEGER NOT NULL, "requests" INTEGER NOT NULL, "spool_bytes" TEXT NOT NULL DEFAULT '', "incremental" TEXT);
        CREATE INDEX "runs_by_start" ON "runs"("started_at");
        """

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: runs, job results, downloads") { db in
            try db.create(table: "runs") { t in
                t.primaryKey("id", .text)
                t.column("jobs_file", .text).notNull()
                t.column("started_at", .double).notNull()
                t.column("ended_at", .double)
                t.column("jobs", .integer).notNull()
                t.column("succeeded", .integer)
                t.column("failed", .integer)
                t.column("skipped", .integer)
                t.column("up_to_date", .integer)
                t.column("bytes", .integer)
                t.column("exit_code", .integer)
            }
            try db.create(table: "job_results") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("run_id", .text).notNull().references("runs", onDelete: .cascade)
                t.column("job", .text).notNull()
                t.column("outcome", .text).notNull()
                t.column("status", .integer)
                t.column("bytes", .integer).notNull()
                t.column("attempts", .integer).notNull()
                t.column("error", .text)
                t.column("message", .text)
                t.column("duration_ms", .integer).notNull()
                t.column("finished_at", .double).notNull()
            }
            try db.create(index: "job_results_by_job", on: "job_results", columns: ["job", "finished_at"])
            try db.create(table: "downloads") { t in
                t.primaryKey("destination", .text)
                t.column("url", .text).notNull()
                t.column("etag", .text)
                t.column("last_modified", .text)
                t.column("total_length", .integer)
                t.column("completed", .boolean).notNull().defaults(to: false)
                t.column("checksum", .text)
                t.column("updated_at", .double).notNull()
            }
        }
        migrator.registerMigration("v2: downloads.date") { db in
            // The response's Date: with it a Last-Modified can be a strong validator (RFC 9110 §8.8.2.2).
            try db.alter(table: "downloads") { t in t.add(column: "date", .text) }
        }
        migrator.registerMigration("v3: runs.cached, runs.errors, runs.first_failures") { db in
            // What `status` summarises, kept with the run: counting a million job results for it
            // would take seconds, and they are pruned after `keptRuns` runs.
            try db.alter(table: "runs") { t in
                t.add(column: "cached", .integer)
                t.add(column: "errors", .text)
                t.add(column: "first_failures", .text)
            }
        }
        migrator.registerMigration("v4: download_segments") { db in
            // A download over several connections (`segments: N`): each range and how much of it
            // is on disk, so a run after a crash continues every segment where it stopped.
            try db.create(table: "download_segments") { t in
                t.column("destination", .text).notNull()
                t.column("idx", .integer).notNull()
                t.column("start", .integer).notNull()
                t.column("end", .integer).notNull()
                t.column("done", .integer).notNull()
                t.primaryKey(["destination", "idx"])
            }
        }
        migrator.registerMigration("v5: pagination_progress, incremental_cursors") { db in
            // `incremental:` jobs' cursors, advanced only by a run in which the job fully succeeded.
            try db.create(table: "incremental_cursors") { t in
                t.primaryKey("job", .text)
                t.column("cursor", .text).notNull()
                t.column("updated_at", .double).notNull()
                t.column("run_id", .text).notNull()
            }
            // A paginated job's last committed page, so a run after a crash continues from the next one.
            try db.create(table: "pagination_progress") { t in
                t.primaryKey("job", .text)
                t.column("fingerprint", .text).notNull()
                t.column("page", .integer).notNull()
                t.column("next", .text).notNull()
                t.column("records", .integer).notNull()
                t.column("items_bytes", .integer).notNull()
                t.column("bytes", .integer).notNull()
                t.column("requests", .integer).notNull()
                // The fan-out spools' lengths after the page, comma-separated (FanOutSpool).
                t.column("spool_bytes", .text).notNull().defaults(to: "")
                // The greatest `incremental.from` value of the committed pages.
                t.column("incremental", .text)
            }
        }
        migrator.registerMigration("v6: job_results, one row a job") { db in
            // Only each job's latest result was ever read (`status --jobs`), but every result was a
            // row of its own, indexed by job, until its run fell out of `keptRuns`. Deleting a
            // 2,000-job run's rows then took 21 million instructions (a scan of every run's rows and
            // a seek in the index for each), about 10,000 a job, on every run after the tenth. Now
            // a job's result replaces its last one, in place, in a table ordered by job.
            try db.execute(sql: """
                CREATE TABLE "job_results_v6" ("run_id" TEXT NOT NULL REFERENCES "runs"("id") ON DELETE CASCADE, "job" TEXT PRIMARY KEY NOT NULL, "outcome" TEXT NOT NULL, "status" INTEGER, "bytes" INTEGER NOT NULL, "attempts" INTEGER NOT NULL, "error" TEXT, "message" TEXT, "duration_ms" INTEGER NOT NULL, "finished_at" DOUBLE NOT NULL) WITHOUT ROWID;
                INSERT INTO job_results_v6 SELECT r.run_id, r.job, r.outcome, r.status, r.bytes, r.attempts, r.error, r.message, r.duration_ms, r.finished_at
                  FROM job_results r JOIN (SELECT job, MAX(id) AS id FROM job_results GROUP BY job) latest ON latest.id = r.id;
                DROP TABLE job_results;
                ALTER TABLE job_results_v6 RENAME TO job_results;
                """)
        }
        migrator.registerMigration("v7: runs by start") { db in
            // Runs are kept (their counts are what `status` shows), so a store that cron has used
            // for a year holds 100,000 of them. Finding the last `keptRuns` of them sorted every
            // run at each run's start (about 6,000 instructions a run: 8 million with 1,300 runs);
            // with the index it reads `keptRuns` entries.
            try db.create(index: "runs_by_start", on: "runs", columns: ["started_at"])
        }
        return migrator
    }

    // MARK: - Runs

    public func beginRun(id: String, jobsFile: String, jobs: Int, at date: Date = Date()) throws {
        try write { db in
            try db.execute(sql: "INSERT INTO runs (id, jobs_file, started_at, jobs) VALUES (?, ?, ?, ?)",
                           arguments: [id, jobsFile, date.timeIntervalSince1970, jobs])
        }
        // The results of jobs that have not run in the last `keptRuns` runs go now, on the writer's
        // thread while the run goes on (a scan of one row a job; a batch that runs the same jobs
        // each time finds none to delete). Their runs' counts stay. A delete that fails leaves the
        // rows for the next run's. The last runs are read from `runs_by_start`, however many runs
        // the store has kept.
        pool.asyncWrite({ db in try db.execute(sql: Self.pruneSQL, arguments: [Self.keptRuns]) }, completion: { _, _ in })
    }

    /// The results of jobs whose last run is not among the last `?` runs (`beginRun`).
    static let pruneSQL = "DELETE FROM job_results WHERE run_id NOT IN (SELECT id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?)"

    /// A job's last result is kept until it has not run for this many runs; older runs keep
    /// their counts. Pruned when a run begins (`beginRun`).
    public static let keptRuns = 10
    /// Failures kept with a run for `status`.
    public static let keptFailures = 20

    /// Closes the store's connections for a process that exits next, after `finishRun`
    /// (`StoreConnections.closeForExit`). The store answers nothing after it.
    public func closeForExit() {
        pool.closeForExit()
    }

    public func finishRun(_ summary: RunSummary, exitCode: Int32, at date: Date = Date()) throws {
        var errors = JSONLine()
        for (code, count) in summary.tally.errors.sorted(by: { $0.key < $1.key }) { errors.int(code, count) }
        let failures = summary.failures.prefix(Self.keptFailures).map { result -> String in
            var line = JSONLine()
            line.string("job", result.job)
            line.string("error", result.error?.code.rawValue ?? "failed")
            if let message = result.error?.message { line.string("message", message) }
            if let url = result.error?.url { line.string("url", url) }
            return line.text + "}"
        }
        try write { db in
            try db.execute(sql: """
                UPDATE runs SET ended_at = ?, succeeded = ?, failed = ?, skipped = ?, up_to_date = ?, cached = ?, bytes = ?, exit_code = ?,
                  errors = ?, first_failures = ?
                WHERE id = ?
                """, arguments: [date.timeIntervalSince1970, summary.count(.succeeded), summary.count(.failed), summary.count(.skipped),
                                 summary.count(.upToDate), summary.count(.cached), summary.bytes, exitCode,
                                 errors.text + "}", "[" + failures.joined(separator: ",") + "]", summary.runID])
        }
    }

    public func recordJob(runID: String, _ result: JobResult, at date: Date = Date()) throws {
        try write { db in try JobResultRows.insert([JobResultRows.Row(runID: runID, result: result, date: date)], into: db) }
    }

    /// Records a job's result without waiting; `flush` waits for it. Results are gathered for up to
    /// 50 ms and written in one transaction: thousands of small jobs cost a few commits, not one
    /// each. A `kill -9` loses at most the last 50 ms of results; the store stays consistent.
    public func recordJobLater(runID: String, _ result: JobResult, at date: Date = Date()) {
        let schedule = queuedResults.withLock { queue -> Bool in
            queue.results.append(JobResultRows.Row(runID: runID, result: result, date: date))
            defer { queue.scheduled = true }
            return !queue.scheduled
        }
        guard schedule else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { [self] in
            pool.asyncWrite({ db in try self.insertQueuedResults(db) }, completion: { _, _ in })
        }
    }

    /// Writes the queued results now, then copies the write-ahead log into the database, on the
    /// writer's thread and without waiting: for the moment a run's last jobs have started. The
    /// run's end then writes the last jobs' results and its own row, and copies only those pages:
    /// about half of a 2,000-job run's results were still queued at its end (the 50 ms batch),
    /// and the log held every page they and the earlier batches touched.
    public func commitSoon() {
        pool.asyncWrite({ db in try self.insertQueuedResults(db) }, completion: { _, _ in })
        pool.asyncWriteWithoutTransaction { db in _ = try? db.checkpoint(.passive) }
    }

    /// Copies the write-ahead log into the database: the work SQLite would do when the store
    /// closes, done here, beside the run's other last writes, instead of after them. Passive: it
    /// copies what no reader still needs and never waits (a `fetchctl status` reading the store
    /// from another process must not hold up the end of a run); closing the store finishes the rest.
    /// Returns the log's frames and how many of them are in the database now.
    @discardableResult
    public func checkpoint() throws -> (frames: Int, copied: Int) {
        try pool.writeWithoutTransaction { db in
            let result = try db.checkpoint(.passive)
            return (result.walFrameCount, result.checkpointedFrameCount)
        }
    }

    /// Inserts every queued result (in the caller's transaction).
    private func insertQueuedResults(_ db: Database) throws {
        let batch = queuedResults.withLock { queue -> [JobResultRows.Row] in
            defer {
                queue.results.removeAll(keepingCapacity: true)
                queue.scheduled = false
            }
            return queue.results
        }
        guard !batch.isEmpty else { return }
        try JobResultRows.insert(batch, into: db)
    }

    /// Waits until every write queued so far is committed.
    public func flush() throws {
        try write { db in try insertQueuedResults(db) }
    }

    /// When the latest run that exited 0 ended (`fetchctl_last_success_timestamp_seconds`).
    public func lastSuccess() throws -> Date? {
        try pool.read { db in
            try Double.fetchOne(db, sql: "SELECT MAX(ended_at) FROM runs WHERE exit_code = 0").map { Date(timeIntervalSince1970: $0) }
        }
    }

    /// The most recent runs, newest first.
    public func recentRuns(limit: Int = 10) throws -> [RunRecord] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?", arguments: [limit]).map(RunRecord.init)
        }
    }

    /// Each job's latest result (in the runs whose results are kept), by job id, one at a time to
    /// `body`, optionally only those with `outcome`: a million jobs are listed without holding them.
    public func forEachLastResult(outcome: String? = nil, _ body: (JobRecord) throws -> Void) throws {
        try pool.read { db in
            let cursor = try Row.fetchCursor(db, sql: """
                SELECT * FROM job_results \(outcome == nil ? "" : "WHERE outcome = ?") ORDER BY job
                """, arguments: outcome.map { [$0] } ?? [])
            while let row = try cursor.next() { try body(JobRecord(row)) }
        }
    }

    /// Each job's latest result, by job id.
    public func lastResults() throws -> [JobRecord] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM job_results ORDER BY job").map(JobRecord.init)
        }
    }

    // MARK: - Downloads

    public func download(at destination: String) throws -> DownloadRecord? {
        try pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM downloads WHERE destination = ?", arguments: [destination]).map(DownloadRecord.init)
        }
    }

    public func saveDownload(_ record: DownloadRecord) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO downloads (destination, url, etag, last_modified, date, total_length, completed, checksum, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(destination) DO UPDATE SET url = excluded.url, etag = excluded.etag,
                  last_modified = excluded.last_modified, date = excluded.date, total_length = excluded.total_length,
                  completed = excluded.completed, checksum = excluded.checksum, updated_at = excluded.updated_at
                """, arguments: [record.destination, record.url, record.etag, record.lastModified, record.date, record.totalLength,
                                 record.completed, record.checksum, Date().timeIntervalSince1970])
        }
    }

    public func deleteDownload(at destination: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM downloads WHERE destination = ?", arguments: [destination])
            try db.execute(sql: "DELETE FROM download_segments WHERE destination = ?", arguments: [destination])
        }
    }

    func write(_ body: (Database) throws -> Void) throws {
        do {
            try pool.write(body)
        } catch {
            throw FetchError(.io, "cannot write the state store in '\(directory)': \(error)")
        }
    }
}

/// A run as the store keeps it.
public struct RunRecord: Sendable, Equatable {
    public var id: String
    public var jobsFile: String
    public var startedAt: Date
    public var endedAt: Date?
    public var jobs: Int
    public var succeeded: Int?
    public var failed: Int?
    public var skipped: Int?
    public var upToDate: Int?
    public var cached: Int?
    public var bytes: Int64?
    public var exitCode: Int?
    /// Failed jobs by error code (`{"timeout": 3}`), as JSON text.
    public var errors: String?
    /// The first failures (`[{"job", "error", "message", "url"}]`), as JSON text.
    public var firstFailures: String?

    init(_ row: Row) {
        id = row["id"]
        jobsFile = row["jobs_file"]
        startedAt = Date(timeIntervalSince1970: row["started_at"])
        endedAt = (row["ended_at"] as Double?).map { Date(timeIntervalSince1970: $0) }
        jobs = row["jobs"]
        succeeded = row["succeeded"]
        failed = row["failed"]
        skipped = row["skipped"]
        upToDate = row["up_to_date"]
        cached = row["cached"]
        bytes = row["bytes"]
        exitCode = row["exit_code"]
        errors = row["errors"]
        firstFailures = row["first_failures"]
    }
}

/// One job's result as the store keeps it.
public struct JobRecord: Sendable, Equatable {
    public var runID: String
    public var job: String
    public var outcome: String
    public var status: Int?
    public var bytes: Int64
    public var attempts: Int
    public var error: String?
    public var message: String?
    public var durationMilliseconds: Int64
    public var finishedAt: Date

    init(_ row: Row) {
        runID = row["run_id"]
        job = row["job"]
        outcome = row["outcome"]
        status = row["status"]
        bytes = row["bytes"]
        attempts = row["attempts"]
        error = row["error"]
        message = row["message"]
        durationMilliseconds = row["duration_ms"]
        finishedAt = Date(timeIntervalSince1970: row["finished_at"])
    }
}

/// What the store remembers about a download: where it came from, its validators, its length, and
/// whether it was completed (renamed into place).
public struct DownloadRecord: Sendable, Equatable {
    public var destination: String
    public var url: String
    public var etag: String?
    public var lastModified: String?
    /// The response's `Date`, which can make `lastModified` a strong validator.
    public var date: String?
    public var totalLength: Int64?
    public var completed: Bool
    /// `sha256:<hex>` of the finished file, when a checksum was verified.
    public var checksum: String?

    public init(destination: String, url: String, etag: String? = nil, lastModified: String? = nil, date: String? = nil,
                totalLength: Int64? = nil, completed: Bool = false, checksum: String? = nil) {
        self.destination = destination
        self.url = url
        self.etag = etag
        self.lastModified = lastModified
        self.date = date
        self.totalLength = totalLength
        self.completed = completed
        self.checksum = checksum
    }

    /// The validator an `If-Range` may carry (RFC 9110 §13.1.5): a strong entity tag; or, for a
    /// response without one, a `Last-Modified` that §8.8.2.2 lets a client treat as strong — the
    /// same server's `Date` at least a second later. Nil otherwise: a weak entity tag is never sent
    /// (`If-Range` compares strongly), and then neither is the date.
    public var rangeValidator: String? {
        if let etag { return etag.hasPrefix("W/") ? nil : etag }
        guard let lastModified, let modified = HTTPDate.parse(lastModified), let date = date.flatMap(HTTPDate.parse),
              date.timeIntervalSince(modified) >= 1 else { return nil }
        return lastModified
    }

    init(_ row: Row) {
        destination = row["destination"]
        url = row["url"]
        etag = row["etag"]
        lastModified = row["last_modified"]
        date = row["date"]
        totalLength = row["total_length"]
        completed = row["completed"]
        checksum = row["checksum"]
    }
}
