import Foundation

/// `fetchctl report merge`: the JSON reports of a batch's shards (or of any runs) as one report,
/// written as JSON or JUnit. JSON is what is merged, since it holds everything a JUnit report says;
/// shards that want a merged JUnit file write `--report json` too.
extension RunReport {
    /// Several runs' JSON reports read back as one run.
    public struct Merged: Sendable {
        public var summary: RunSummary
        public var jobsFile: String
        /// The highest of the runs' exit codes: 0 only if every run succeeded, and a run that
        /// must be tried again (75) or was interrupted (130, 143) is not hidden by a plain failure.
        public var exitCode: Int32
        /// Jobs that appeared in more than one report (the later report's result was kept).
        public var duplicates: [String]
    }

    /// Reads the JSON reports `reports` (their contents, named by `names` in errors), in order.
    public static func merge(_ reports: [(name: String, data: Data)]) throws -> Merged {
        var runIDs: [String] = []
        var jobsFile = ""
        var exitCode: Int32 = 0
        var duration = Duration.zero
        var stop: RunSummary.Stop?
        var results: [JobResult] = []
        var indexByJob: [String: Int] = [:]
        var duplicates: [String] = []
        for (name, data) in reports {
            guard let run = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let jobs = run["jobs"] as? [[String: Any]],
                  let runID = run["run_id"] as? String else {
                throw FetchError(.io, "'\(name)' is not a fetchctl JSON report (merge reads the files --report json writes)")
            }
            runIDs.append(runID)
            if jobsFile.isEmpty { jobsFile = run["jobs_file"] as? String ?? "" }
            exitCode = max(exitCode, Int32(run["exit_code"] as? Int ?? 0))
            duration = max(duration, .milliseconds(run["duration_ms"] as? Int ?? 0))
            if stop == nil, let stopped = run["stopped"] as? String { stop = RunSummary.Stop(rawValue: stopped) }
            for job in jobs {
                guard let id = job["job"] as? String, let outcome = (job["outcome"] as? String).flatMap(JobResult.Outcome.init(rawValue:)) else {
                    throw FetchError(.io, "'\(name)' has a job without an id or a known outcome")
                }
                var error: FetchError?
                if let code = job["error"] as? String {
                    error = FetchError(FetchError.Code(rawValue: code) ?? .io, job["message"] as? String ?? code, url: job["url"] as? String)
                }
                let result = JobResult(job: id, outcome: outcome, status: job["status"] as? Int, bytes: Int64(job["bytes"] as? Int ?? 0),
                                       attempts: job["attempts"] as? Int ?? 0, error: error, reason: job["reason"] as? String,
                                       duration: .milliseconds(job["duration_ms"] as? Int ?? 0), path: job["path"] as? String,
                                       cache: (job["cache"] as? String).flatMap(RequestMetrics.CacheUse.init(rawValue:)))
                if let index = indexByJob[id] {
                    duplicates.append(id)
                    results[index] = result
                } else {
                    indexByJob[id] = results.count
                    results.append(result)
                }
            }
        }
        let summary = RunSummary(runID: runIDs.joined(separator: "+"), results: results, duration: duration, stop: stop)
        return Merged(summary: summary, jobsFile: jobsFile, exitCode: exitCode, duplicates: duplicates)
    }
}
