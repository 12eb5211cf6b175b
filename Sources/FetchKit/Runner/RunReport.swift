import Foundation

/// `--report junit PATH` and `--report json PATH`: the run and every job's result, written when the
/// run ends (failed jobs included), atomically.
public enum RunReport {
    public enum Format: String, Sendable, CaseIterable { case junit, json }

    public static func write(_ summary: RunSummary, jobsFile: String, exitCode: Int32, format: Format, to path: String,
                             redactor: Redactor) throws {
        let text = format == .junit ? junit(summary, jobsFile: jobsFile, redactor: redactor)
            : json(summary, jobsFile: jobsFile, exitCode: exitCode, redactor: redactor)
        do {
            try FileIO.createDirectory(containing: path)
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch let error as FetchError {
            throw error
        } catch {
            throw FetchError(.io, "cannot write the report '\(path)': \(error.localizedDescription)")
        }
    }

    /// One `testcase` per job: failures with their error, skips with their reason.
    public static func junit(_ summary: RunSummary, jobsFile: String, redactor: Redactor) -> String {
        func seconds(_ d: Duration) -> String { String(format: "%.3f", d.seconds) }
        let name = xml((jobsFile as NSString).lastPathComponent)
        let counts = "tests=\"\(summary.results.count)\" failures=\"\(summary.count(.failed))\" skipped=\"\(summary.count(.skipped))\" time=\"\(seconds(summary.duration))\""
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"fetchctl\" \(counts)>\n"
        out += "  <testsuite name=\"\(name)\" \(counts) id=\"\(xml(summary.runID))\">\n"
        out += "    <properties>\n"
        for use in [RequestMetrics.CacheUse.hit, .revalidated, .stale] {
            out += "      <property name=\"cache_\(use.rawValue)\" value=\"\(summary.count(cache: use))\"/>\n"
        }
        out += "    </properties>\n"
        for result in summary.results {
            out += "    <testcase classname=\"\(name)\" name=\"\(xml(result.job))\" time=\"\(seconds(result.duration))\""
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
        }
        return out + "  </testsuite>\n</testsuites>\n"
    }

    /// The run and each job's result as one JSON object.
    public static func json(_ summary: RunSummary, jobsFile: String, exitCode: Int32, redactor: Redactor) -> String {
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
        let jobs = summary.results.map { result -> String in
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
        return run.text + ",\"jobs\":[" + jobs.joined(separator: ",") + "]}\n"
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
