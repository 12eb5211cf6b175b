import Foundation

/// What a run's progress shows, counted from finished jobs: done out of total, failures by error
/// code, skips, the rate and the time left. Shared by the terminal's progress line
/// (`ProgressDisplay`) and the log's `run.progress` line (`TextLogMonitor`); a job costs a few
/// counter updates, so a million-job run counts the same way.
struct JobProgress {
    var total = 0
    var done = 0
    var failed = 0
    var skipped = 0
    /// Failed jobs by error code (a handful of codes, whatever the run's size).
    var failures: [String: Int] = [:]
    var started = ContinuousClock.now

    init(total: Int = 0) { self.total = total }

    mutating func count(_ result: JobResult) {
        done += 1
        switch result.outcome {
        case .failed:
            failed += 1
            failures[result.error?.code.rawValue ?? "failed", default: 0] += 1
        case .skipped:
            skipped += 1
        default:
            break
        }
    }

    /// Seconds since the run started (never 0).
    var elapsed: Double { max((ContinuousClock.now - started).seconds, 0.001) }

    /// Jobs a second over `seconds` (the time so far unless given).
    func rate(over seconds: Double? = nil) -> Double { Double(done) / max(seconds ?? elapsed, 0.001) }

    /// Seconds left at the rate so far; nil before the first job or once all are done.
    func secondsLeft(over seconds: Double? = nil) -> Int? {
        guard done > 0, total > done else { return nil }
        return Int((Double(total - done) / rate(over: seconds)).rounded(.up))
    }

    /// `2310 jobs/s · ETA 7m08s`.
    func rateAndETA(over seconds: Double? = nil) -> String {
        let seconds = seconds ?? elapsed
        return "\(Int(rate(over: seconds).rounded())) jobs/s" + (secondsLeft(over: seconds).map { " · ETA " + Self.eta(seconds: $0) } ?? "")
    }

    /// `timeout 9, status 3`: the codes, most frequent first, at most three and a count of the rest.
    var failuresByCode: String {
        let sorted = failures.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        var parts = sorted.prefix(3).map { "\($0.key) \($0.value)" }
        if sorted.count > 3 { parts.append("\(sorted.count - 3) more codes") }
        return parts.joined(separator: ", ")
    }

    /// `45s`, `7m08s`, `2h05m`: the time left, to the second while it is short.
    static func eta(seconds: Int) -> String {
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m" + String(format: "%02ds", seconds % 60) }
        return "\(seconds / 3600)h" + String(format: "%02dm", seconds % 3600 / 60)
    }
}
