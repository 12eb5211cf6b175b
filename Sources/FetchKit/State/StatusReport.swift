import Foundation

/// What `fetchctl status` prints: the recent runs, then each job's last outcome.
public struct StatusReport: Sendable {
    public enum Format: String, Sendable, CaseIterable { case text, json }

    public var runs: [RunRecord]
    public var jobs: [JobRecord]

    public init(store: StateStore, runLimit: Int = 10) throws {
        runs = try store.recentRuns(limit: runLimit)
        jobs = try store.lastResults()
    }

    public func render(_ format: Format) -> String {
        format == .json ? json : text
    }

    var text: String {
        var out = "Runs (newest first):\n"
        for run in runs {
            let started = LogFormatting.timestamp(run.startedAt)
            let duration = run.endedAt.map { LogFormatting.duration(.seconds($0.timeIntervalSince(run.startedAt))) } ?? "did not finish"
            var line = "  \(run.id)  \(started)  \(duration)  exit \(run.exitCode.map(String.init) ?? "-")  \(run.jobs) jobs"
            if let succeeded = run.succeeded {
                line += ": \(succeeded) succeeded, \(run.failed ?? 0) failed, \(run.skipped ?? 0) skipped, \(run.upToDate ?? 0) up to date"
            }
            out += line + "\n"
        }
        out += "Jobs (last outcome):\n"
        let width = min(40, jobs.map(\.job.count).max() ?? 0)
        for job in jobs {
            var line = "  " + job.job.padding(toLength: max(width, job.job.count), withPad: " ", startingAt: 0) + "  " + job.outcome
            if let status = job.status { line += "  HTTP \(status)" }
            if let error = job.error { line += "  \(error): \(job.message ?? "")" } else if job.outcome == "skipped", let reason = job.message {
                line += "  \(reason)"
            }
            line += "  (\(LogFormatting.timestamp(job.finishedAt)), run \(job.runID))"
            out += line + "\n"
        }
        return out
    }

    var json: String {
        let runLines = runs.map { run -> String in
            var line = JSONLine()
            line.string("run_id", run.id)
            line.string("jobs_file", run.jobsFile)
            line.string("started_at", LogFormatting.timestamp(run.startedAt))
            if let ended = run.endedAt { line.string("ended_at", LogFormatting.timestamp(ended)) }
            line.int("jobs", run.jobs)
            if let value = run.succeeded { line.int("succeeded", value) }
            if let value = run.failed { line.int("failed", value) }
            if let value = run.skipped { line.int("skipped", value) }
            if let value = run.upToDate { line.int("up_to_date", value) }
            if let value = run.bytes { line.int("bytes", value) }
            if let value = run.exitCode { line.int("exit_code", value) }
            return line.text + "}"
        }
        let jobLines = jobs.map { job -> String in
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
            return line.text + "}"
        }
        return "{\"runs\":[" + runLines.joined(separator: ",") + "],\"jobs\":[" + jobLines.joined(separator: ",") + "]}\n"
    }
}
