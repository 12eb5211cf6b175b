import Foundation

/// What `fetchctl status` prints: the recent runs and a summary of the last one (counts by outcome
/// and error code, its first failures, its timing), read from the runs table alone, so it answers
/// at once whatever the batch's size. Every job's last outcome is listed only when asked
/// (`forEachJob`), one at a time.
public struct StatusReport: Sendable {
    public enum Format: String, Sendable, CaseIterable { case text, json }

    public var runs: [RunRecord]
    /// `incremental:` jobs' cursors: where each one's next run starts.
    public var cursors: [IncrementalCursor]

    public init(store: StateStore, runLimit: Int = 10) throws {
        runs = try store.recentRuns(limit: max(1, runLimit))
        cursors = try store.incrementalCursors()
    }

    /// Cursors listed in text; the rest are counted (`--format json` lists them all).
    static let shownCursors = 50

    var cursorText: String {
        guard !cursors.isEmpty else { return "" }
        var out = "Incremental cursors (the next run fetches what changed after them; reset with run --reset-incremental JOB):\n"
        let width = min(40, cursors.prefix(Self.shownCursors).map(\.job.count).max() ?? 0)
        for cursor in cursors.prefix(Self.shownCursors) {
            out += "  " + cursor.job.padding(toLength: max(width, cursor.job.count), withPad: " ", startingAt: 0)
                + "  \(cursor.cursor)  (advanced \(LogFormatting.timestamp(cursor.updatedAt)), run \(cursor.runID))\n"
        }
        if cursors.count > Self.shownCursors { out += "  … and \(cursors.count - Self.shownCursors) more (--format json lists them all)\n" }
        return out
    }

    public func render(_ format: Format) -> String {
        format == .json ? json : text
    }

    var text: String { runsText + cursorText }

    private var runsText: String {
        var out = "Runs (newest first):\n"
        for run in runs {
            let started = LogFormatting.timestamp(run.startedAt)
            let duration = run.endedAt.map { LogFormatting.duration(.seconds($0.timeIntervalSince(run.startedAt))) } ?? "did not finish"
            var line = "  \(run.id)  \(started)  \(duration)  exit \(run.exitCode.map(String.init) ?? "-")  \(run.jobs) jobs"
            if let succeeded = run.succeeded {
                line += ": \(succeeded) succeeded, \(run.failed ?? 0) failed, \(run.skipped ?? 0) skipped, \(run.upToDate ?? 0) up to date"
                if let cached = run.cached, cached > 0 { line += ", \(cached) cached" }
            }
            out += line + "\n"
        }
        guard let last = runs.first else { return out }
        out += "Last run, \(last.id) (\(last.jobsFile)):\n"
        guard let ended = last.endedAt, let succeeded = last.succeeded else {
            return out + "  did not finish (it is running, or was killed); its jobs so far: fetchctl status --jobs\n"
        }
        let seconds = ended.timeIntervalSince(last.startedAt)
        let done = succeeded + (last.failed ?? 0) + (last.skipped ?? 0) + (last.upToDate ?? 0) + (last.cached ?? 0)
        let rate = seconds > 0 ? " (\(Int((Double(done) / seconds).rounded())) jobs/s)" : ""
        out += "  \(done) jobs in \(LogFormatting.duration(.seconds(seconds)))\(rate), \(LogFormatting.bytes(last.bytes ?? 0)) received, exit \(last.exitCode.map(String.init) ?? "-")\n"
        let errors = Self.errorCounts(last)
        if !errors.isEmpty {
            out += "  failed by error code: " + errors.map { "\($0.code) \($0.count)" }.joined(separator: ", ") + "\n"
        }
        let failures = Self.failures(last)
        if !failures.isEmpty {
            out += "  first failures:\n"
            let width = min(40, failures.map { ($0["job"] as? String ?? "").count }.max() ?? 0)
            for failure in failures {
                let job = failure["job"] as? String ?? ""
                var line = "    " + job.padding(toLength: max(width, job.count), withPad: " ", startingAt: 0)
                line += "  \(failure["error"] as? String ?? "failed")"
                if let message = failure["message"] as? String { line += ": \(message)" }
                if let url = failure["url"] as? String { line += " (\(url))" }
                out += line + "\n"
            }
        }
        out += "Every job's last outcome: fetchctl status --jobs (--outcome failed for the failed ones)\n"
        return out
    }

    var json: String {
        let runLines = runs.map { run -> String in
            var line = JSONLine()
            line.string("run_id", run.id)
            line.string("jobs_file", run.jobsFile)
            line.string("started_at", LogFormatting.timestamp(run.startedAt))
            if let ended = run.endedAt {
                line.string("ended_at", LogFormatting.timestamp(ended))
                line.int("duration_ms", Int64((ended.timeIntervalSince(run.startedAt) * 1000).rounded()))
            }
            line.int("jobs", run.jobs)
            if let value = run.succeeded { line.int("succeeded", value) }
            if let value = run.failed { line.int("failed", value) }
            if let value = run.skipped { line.int("skipped", value) }
            if let value = run.upToDate { line.int("up_to_date", value) }
            if let value = run.cached { line.int("cached", value) }
            if let value = run.bytes { line.int("bytes", value) }
            if let value = run.exitCode { line.int("exit_code", value) }
            var text = line.text
            if let errors = run.errors { text += ",\"errors\":" + errors }
            if let failures = run.firstFailures { text += ",\"first_failures\":" + failures }
            return text + "}"
        }
        let cursorLines = cursors.map { cursor -> String in
            var line = JSONLine()
            line.string("job", cursor.job)
            line.string("cursor", cursor.cursor)
            line.string("updated_at", LogFormatting.timestamp(cursor.updatedAt))
            line.string("run_id", cursor.runID)
            return line.text + "}"
        }
        return "{\"runs\":[" + runLines.joined(separator: ",") + "],\"incremental_cursors\":[" + cursorLines.joined(separator: ",") + "]}\n"
    }

    /// Every job's last outcome (optionally only `outcome`), a line (text) or a JSON object (json,
    /// one per line) at a time to `write`.
    public static func forEachJob(in store: StateStore, outcome: String? = nil, format: Format, _ write: (String) -> Void) throws {
        try store.forEachLastResult(outcome: outcome) { job in
            switch format {
            case .text:
                var line = job.job + "  " + job.outcome
                if let status = job.status { line += "  HTTP \(status)" }
                if let error = job.error { line += "  \(error): \(job.message ?? "")" } else if job.outcome == "skipped", let reason = job.message {
                    line += "  \(reason)"
                }
                write(line + "  (\(LogFormatting.timestamp(job.finishedAt)), run \(job.runID))\n")
            case .json:
                var line = JSONLine()
                line.string("job", job.job)
                line.string("outcome", job.outcome)
                line.string("run_id", job.runID)
                line.string("finished_at", LogFormatting.timestamp(job.finishedAt))
                if let status = job.status { line.int("status", status) }
                line.int("bytes", job.bytes)
                line.int("attempts", job.attempts)
                if let error = job.error { line.string("error", error) }
                if let message = job.message { line.string(job.error == nil ? "reason" : "message", message) }
                write(line.text + "}\n")
            }
        }
    }

    static func errorCounts(_ run: RunRecord) -> [(code: String, count: Int)] {
        guard let data = run.errors?.data(using: .utf8), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Int] else { return [] }
        return object.map { ($0.key, $0.value) }.sorted { $0.count != $1.count ? $0.count > $1.count : $0.code < $1.code }
    }

    static func failures(_ run: RunRecord) -> [[String: Any]] {
        guard let data = run.firstFailures?.data(using: .utf8) else { return [] }
        return (try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
    }
}
