import Foundation

/// `--report junit PATH` and `--report json PATH`: the run and every job's result, written when the
/// run ends (failed jobs included), atomically. A run's jobs are gathered as they finish
/// (`RunReportSpool`, in the order they finished), so a million-job report is streamed to disk,
/// never held.
public enum RunReport {
    public enum Format: String, Sendable, CaseIterable { case junit, json }

    /// Writes the report of `summary`, with its `results` as the jobs (a merge of reports).
    public static func write(_ summary: RunSummary, jobsFile: String, exitCode: Int32, format: Format, to path: String,
                             redactor: Redactor) throws {
        let entries = summary.results.map { entry($0, format: format, jobsFile: jobsFile, redactor: redactor) }
        try write(summary, jobsFile: jobsFile, exitCode: exitCode, format: format, to: path) { sink in
            for (index, entry) in entries.enumerated() { try sink((index > 0 && format == .json ? "," : "") + entry) }
        }
    }

    /// Writes the report of a run: the written-out jobs from `summary.results` in plan order, then
    /// the data files' jobs `spool` gathered as they finished.
    public static func write(_ summary: RunSummary, jobsFile: String, exitCode: Int32, spool: RunReportSpool.Report,
                             redactor: Redactor) throws {
        let format = spool.format
        try write(summary, jobsFile: jobsFile, exitCode: exitCode, format: format, to: spool.path) { sink in
            for (index, result) in summary.results.enumerated() {
                try sink((index > 0 && format == .json ? "," : "") + entry(result, format: format, jobsFile: jobsFile, redactor: redactor))
            }
            var first = summary.results.isEmpty && format == .json
            try spool.copy { chunk in
                // The spool's entries each start with a comma; without written-out jobs the first must not.
                if first, chunk.hasPrefix(",") {
                    first = false
                    try sink(String(chunk.dropFirst()))
                } else {
                    first = false
                    try sink(chunk)
                }
            }
        }
    }

    /// Header, the jobs `body` writes, footer: into a temporary file beside `path`, renamed over it.
    private static func write(_ summary: RunSummary, jobsFile: String, exitCode: Int32, format: Format, to path: String,
                              body: ((String) throws -> Void) throws -> Void) throws {
        let temporary = (path as NSString).deletingLastPathComponent.isEmpty ? ".\(path).tmp-\(getpid())"
            : ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent(".\((path as NSString).lastPathComponent).tmp-\(getpid())")
        do {
            try FileIO.createDirectory(containing: path)
            _ = FileManager.default.createFile(atPath: temporary, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: temporary))
            var buffer = Data()
            func sink(_ text: String) throws {
                buffer.append(contentsOf: text.utf8)
                if buffer.count >= 1 << 16 {
                    try handle.write(contentsOf: buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            do {
                try sink(header(summary, jobsFile: jobsFile, exitCode: exitCode, format: format))
                try body(sink)
                try sink(format == .junit ? "  </testsuite>\n</testsuites>\n" : "]}\n")
                try handle.write(contentsOf: buffer)
                try handle.close()
            } catch {
                try? handle.close()
                throw error
            }
            guard rename(temporary, path) == 0 else { throw FetchError(.io, "cannot write the report '\(path)': \(String(cString: strerror(errno)))") }
        } catch let error as FetchError {
            unlink(temporary)
            throw error
        } catch {
            unlink(temporary)
            throw FetchError(.io, "cannot write the report '\(path)': \(error.localizedDescription)")
        }
    }

    /// The report up to its first job.
    static func header(_ summary: RunSummary, jobsFile: String, exitCode: Int32, format: Format) -> String {
        switch format {
        case .junit:
            func seconds(_ d: Duration) -> String { String(format: "%.3f", d.seconds) }
            let name = xml((jobsFile as NSString).lastPathComponent)
            let counts = "tests=\"\(summary.jobCount)\" failures=\"\(summary.count(.failed))\" skipped=\"\(summary.count(.skipped))\" time=\"\(seconds(summary.duration))\""
            var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            out += "<testsuites name=\"fetchctl\" \(counts)>\n"
            out += "  <testsuite name=\"\(name)\" \(counts) id=\"\(xml(summary.runID))\">\n"
            out += "    <properties>\n"
            for use in [RequestMetrics.CacheUse.hit, .revalidated, .stale] {
                out += "      <property name=\"cache_\(use.rawValue)\" value=\"\(summary.count(cache: use))\"/>\n"
            }
            return out + "    </properties>\n"
        case .json:
            var run = JSONLine()
            run.string("run_id", summary.runID)
            run.string("jobs_file", jobsFile)
            run.int("exit_code", exitCode)
            run.int("duration_ms", summary.duration.milliseconds)
            for outcome in JobResult.Outcome.allCases { run.int(outcome.rawValue, summary.count(outcome)) }
            run.int("bytes", summary.bytes)
            run.int("cache_hits", summary.count(cache: .hit))
            run.int("cache_revalidated", summary.count(cache: .revalidated))
            run.int("cache_stale", summary.count(cache: .stale))
            run.int("cache_bytes", summary.cacheBytes)
            if let stop = summary.stop { run.string("stopped", stop.rawValue) }
            return run.text + ",\"jobs\":["
        }
    }

    /// One job: a JUnit `testcase` (failures with their error, skips with their reason) or a JSON object.
    static func entry(_ result: JobResult, format: Format, jobsFile: String, redactor: Redactor) -> String {
        switch format {
        case .junit:
            let name = xml((jobsFile as NSString).lastPathComponent)
            var out = "    <testcase classname=\"\(name)\" name=\"\(xml(result.job))\" time=\"\(String(format: "%.3f", result.duration.seconds))\""
            if let cache = result.cache, cache != .miss {
                out += ">\n      <properties><property name=\"cache\" value=\"\(cache.rawValue)\"/></properties>"
            }
            let opened = result.cache.map { $0 != .miss } ?? false
            switch result.outcome {
            case .failed:
                let error = result.error
                let message = redactor.redact(error.map { "\($0.code.rawValue): \($0.message)" } ?? "failed")
                out += (opened ? "\n" : ">\n") + "      <failure type=\"\(xml(error?.code.rawValue ?? "failed"))\" message=\"\(xml(message))\">"
                out += xml(redactor.redact(error?.url ?? "")) + (result.attempts > 1 ? xml(" after \(result.attempts) attempts") : "")
                out += "</failure>\n    </testcase>\n"
            case .skipped:
                out += (opened ? "\n" : ">\n") + "      <skipped message=\"\(xml(result.reason ?? "skipped"))\"/>\n    </testcase>\n"
            default:
                out += opened ? "\n    </testcase>\n" : "/>\n"
            }
            return out
        case .json:
            var job = JSONLine()
            job.string("job", result.job)
            job.string("outcome", result.outcome.rawValue)
            if let status = result.status { job.int("status", status) }
            job.int("bytes", result.bytes)
            job.int("attempts", result.attempts)
            job.int("duration_ms", result.duration.milliseconds)
            if let cache = result.cache { job.string("cache", cache.rawValue) }
            if let error = result.error {
                job.string("error", error.code.rawValue)
                job.string("message", redactor.redact(error.message))
                if let url = error.url { job.string("url", redactor.redact(url)) }
            }
            if let reason = result.reason { job.string("reason", reason) }
            if let path = result.path { job.string("path", path) }
            return job.text + "}"
        }
    }

    /// The whole report as text (tests, and reports small enough to hold).
    public static func junit(_ summary: RunSummary, jobsFile: String, redactor: Redactor) -> String {
        header(summary, jobsFile: jobsFile, exitCode: 0, format: .junit)
            + summary.results.map { entry($0, format: .junit, jobsFile: jobsFile, redactor: redactor) }.joined()
            + "  </testsuite>\n</testsuites>\n"
    }

    public static func json(_ summary: RunSummary, jobsFile: String, exitCode: Int32, redactor: Redactor) -> String {
        header(summary, jobsFile: jobsFile, exitCode: exitCode, format: .json)
            + summary.results.map { entry($0, format: .json, jobsFile: jobsFile, redactor: redactor) }.joined(separator: ",") + "]}\n"
    }

    static func xml(_ s: String) -> String {
        var out = ""
        for ch in s.unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default:
                if ch.value < 0x20 && ch != "\n" && ch != "\t" { out += " " } else { out.unicodeScalars.append(ch) }
            }
        }
        return out
    }
}
