/// The one-screen text summary printed at the end of a run: counts, bytes, duration, and the jobs
/// that failed or were skipped, with why.
public struct RunSummaryRenderer: Sendable {
    /// Failed and skipped jobs listed before "… and N more".
    public var listLimit: Int
    public var redactor: Redactor

    public init(redactor: Redactor, listLimit: Int = 15) {
        self.redactor = redactor
        self.listLimit = listLimit
    }

    public func render(_ summary: RunSummary) -> String {
        var counts = ["\(summary.count(.succeeded)) succeeded", "\(summary.count(.failed)) failed", "\(summary.count(.skipped)) skipped"]
        if summary.count(.upToDate) > 0 { counts.append("\(summary.count(.upToDate)) up to date") }
        if summary.count(.cached) > 0 { counts.append("\(summary.count(.cached)) cached") }
        let rate = Int64(Double(summary.bytes) / max(summary.duration.seconds, 0.001))
        var lines = [
            "\(summary.jobCount) job\(summary.jobCount == 1 ? "" : "s") in \(LogFormatting.duration(summary.duration)): " + counts.joined(separator: ", "),
            "\(LogFormatting.bytes(summary.bytes)) received (\(LogFormatting.bytes(rate))/s)"
                + (summary.cacheBytes > 0 ? " · \(LogFormatting.bytes(summary.cacheBytes)) from the cache" : "") + " · run \(summary.runID)",
        ]
        let (hits, revalidated, stale) = (summary.count(cache: .hit), summary.count(cache: .revalidated), summary.count(cache: .stale))
        if hits + revalidated + stale > 0 {
            var cache = "Cache: \(hits) hit\(hits == 1 ? "" : "s"), \(revalidated) revalidated (304)"
            if stale > 0 { cache += ", \(stale) stale (served while the network failed)" }
            lines.append(cache)
        }
        switch summary.stop {
        case .failFast?: lines.append("Stopped early: a job failed and fail_fast is on.")
        case .maxTime?: lines.append("Stopped early: the run reached --max-time.")
        case .interrupted?: lines.append("Interrupted: running jobs were cancelled.")
        case nil: break
        }
        let failed = summary.failures
        if !failed.isEmpty {
            lines.append("Failed:")
            let width = min(40, failed.map(\.job.count).max() ?? 0)
            for result in failed.prefix(listLimit) {
                let error = result.error
                var text = "  " + result.job.padding(toLength: max(width, result.job.count), withPad: " ", startingAt: 0)
                text += "  " + (error.map { "\($0.code.rawValue): \(redactor.redact($0.message))" } ?? "failed")
                if let url = error?.url { text += " (\(redactor.redact(url)))" }
                if result.attempts > 1 { text += " after \(result.attempts) attempts" }
                lines.append(text)
            }
            let total = summary.count(.failed)
            if total > listLimit {
                lines.append("  … and \(total - listLimit) more (see the log); by error code: "
                             + summary.tally.errors.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
                                .map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
        }
        let skipped = summary.tally.skipped
        if !skipped.isEmpty {
            lines.append("Skipped:")
            for result in skipped.prefix(listLimit) { lines.append("  \(result.job)  \(result.reason ?? "")") }
            if summary.count(.skipped) > listLimit { lines.append("  … and \(summary.count(.skipped) - listLimit) more") }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
