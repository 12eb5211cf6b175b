import Foundation
import GRDB
import GRDBSQLite

/// Writes job results into `job_results` (one row a job: a result replaces the job's last one)
/// through SQLite's C API, up to 64 rows per INSERT.
/// A 20,000-job run records 20,000 rows; through GRDB's `StatementArguments` each row boxed ten
/// values and ran its own statement, which took more time than SQLite's own b-tree work. GRDB owns
/// the connection and the transaction; this only prepares, binds and steps its own statements.
enum JobResultRows {
    struct Row: Sendable {
        var runID: String
        var result: JobResult
        var date: Date
    }

    static let rowsPerStatement = 64
    /// In the order `execute` binds them; `job` is the table's key.
    private static let columns = ["run_id", "job", "outcome", "status", "bytes", "attempts", "error", "message", "duration_ms", "finished_at"]

    /// Inserts `rows` in the caller's transaction, through statements the connection keeps
    /// (GRDB's statement cache): a 64-row INSERT took SQLite longer to parse than to run, and a
    /// run commits a batch every few milliseconds. Batches are cut into chunks of 64, 32, 16, 8, 4,
    /// 2 and 1 rows, so seven statements serve every batch size: with one statement per size, a
    /// 2,000-job run prepared nearly all 64 of them, each once, which cost more than the inserts.
    static func insert(_ rows: some Collection<Row>, into db: Database) throws {
        var rest = rows[...]
        while !rest.isEmpty {
            var size = rowsPerStatement
            while size > rest.count { size /= 2 }
            let chunk = rest.prefix(size)
            rest = rest.dropFirst(size)
            let statement = try db.cachedStatement(sql: sql(rows: size)).sqliteStatement
            defer { sqlite3_reset(statement) }
            try execute(statement, binding: chunk, in: db)
        }
    }

    /// The INSERT for 1, 2, 4, … `rowsPerStatement` rows, by the power of two: a job's row, if it
    /// has one, takes every column of the new result.
    ///
    /// Written by appending in loops: made with `joined(separator:)`, whose first call ran
    /// unspecialized and resolved its witnesses at run time, the table cost about 460,000
    /// instructions at the first job result of every run.
    private static let sqlByPower: [String] = {
        var row = "("
        var names = ""
        var update = ""
        for (index, column) in columns.enumerated() {
            let separator = index == 0 ? "" : ", "
            row += separator + "?"
            names += separator + column
            if column != "job" { update += (update.isEmpty ? "" : ", ") + column + " = excluded." + column }
        }
        row += ")"
        var statements: [String] = []
        for power in 0...6 {
            var sql = "INSERT INTO job_results (" + names + ") VALUES "
            for index in 0..<(1 << power) { sql += (index == 0 ? "" : ", ") + row }
            statements.append(sql + " ON CONFLICT (job) DO UPDATE SET " + update)
        }
        return statements
    }()

    private static func sql(rows: Int) -> String {
        sqlByPower[rows.trailingZeroBitCount]
    }

    /// Binds `rows` and steps the statement, the rows' texts in place (`SQLiteC.TextBuffer`): bound
    /// as copies, SQLite allocated and freed one for each of a row's four or five texts (about
    /// 1,900 instructions a job).
    private static func execute(_ statement: OpaquePointer, binding rows: some Collection<Row>, in db: Database) throws {
        sqlite3_reset(statement)
        var capacity = 0
        for row in rows {
            let result = row.result
            capacity += row.runID.utf8.count + result.job.utf8.count + result.outcome.rawValue.utf8.count
                + (result.error?.code.rawValue.utf8.count ?? 0) + ((result.error?.message ?? result.reason)?.utf8.count ?? 0)
        }
        try SQLiteC.withTextBuffer(capacity: capacity, for: statement) { texts in
            var index: Int32 = 1
            for row in rows {
                let result = row.result
                texts.bind(row.runID, at: index)
                texts.bind(result.job, at: index + 1)
                texts.bind(result.outcome.rawValue, at: index + 2)
                if let status = result.status { sqlite3_bind_int64(statement, index + 3, Int64(status)) } else { sqlite3_bind_null(statement, index + 3) }
                sqlite3_bind_int64(statement, index + 4, result.bytes)
                sqlite3_bind_int64(statement, index + 5, Int64(result.attempts))
                texts.bind(result.error?.code.rawValue, at: index + 6)
                texts.bind(result.error?.message ?? result.reason, at: index + 7)
                sqlite3_bind_int64(statement, index + 8, result.duration.milliseconds)
                sqlite3_bind_double(statement, index + 9, row.date.timeIntervalSince1970)
                index += Int32(columns.count)
            }
            let code = sqlite3_step(statement)
            guard code == SQLITE_DONE else { throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: "INSERT INTO job_results") }
        }
    }
}
