import Foundation
import ArgumentParser
import FetchKit

/// `fetchctl run`'s options as plain values: what `RunCommand` parses with ArgumentParser, and
/// what `init(quicklyParsing:)` reads from the common command lines without it.
///
/// ArgumentParser meeting its types for the first time is most of a short run's start: 17 of a
/// one-job run's 76 million instructions, on the main thread while the jobs file loads on the
/// other core (the Swift runtime looks up each of its conformances by scanning the binary's
/// 10,800 conformance records). A command line such as `fetchctl run jobs.yaml --progress never
/// --log-file run.log` is read here instead, and only when every argument is one this reader
/// knows and its values are valid: anything else (an unknown or repeated option, a value that
/// looks like an option, `--report`, a value `validate()` refuses) goes to ArgumentParser, so that
/// every mistake is reported by ArgumentParser, word for word as before (`RunOptionsTests`
/// compares the two readers over a corpus of command lines).
struct RunOptions: Equatable {
    var jobsFile: String
    var concurrency: Int?
    var jobs: [String] = []
    var dryRun = false
    var logFormat: RunInvocation.LogFormat = .text
    var logFile: String?
    var progress: RunInvocation.ProgressMode = .auto
    var stateDir: String?
    var noResume = false
    var resetIncremental: [String] = []
    var offline = false
    var report: [String] = []
    var metricsFile: String?
    var metricsPush: String?
    var failFast = false
    var shard: String?
    var maxTime: String?

    init(jobsFile: String) {
        self.jobsFile = jobsFile
    }

    /// The options of `fetchctl run ARGUMENTS` (the arguments after `run`), read without
    /// ArgumentParser; nil for a command line this reader leaves to ArgumentParser (see the type's
    /// comment). It knows `run`'s long options, as `--name value` or `--name=value`, except
    /// `--report` (its values run up to the next option); the jobs file comes first. With
    /// `--dry-run`, `--state-dir` or `--shard` no prefetch was begun (`RunPrefetch`), and the run
    /// loads its jobs file itself.
    init?(quicklyParsing arguments: [String]) {
        guard let file = arguments.first, !file.isEmpty, !file.hasPrefix("-"), file != "help" else { return nil }
        self.init(jobsFile: file)
        var seen = Set<String>()
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else { return nil }
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard let kind = Self.quickOptions[name] else { return nil }
            // Repeating a single-valued option or a flag is left to ArgumentParser's rules.
            if !kind.repeatable { guard seen.insert(name).inserted else { return nil } }
            if kind.isFlag {
                guard parts.count == 1 else { return nil }
                setFlag(name)
                continue
            }
            let value: String
            if parts.count == 2 {
                value = String(parts[1])
            } else {
                guard index < arguments.count else { return nil }
                value = arguments[index]
                index += 1
            }
            guard !value.isEmpty, !value.hasPrefix("-"), set(name, to: value) else { return nil }
        }
        guard (try? validate()) != nil else { return nil }
    }

    private struct Kind {
        var isFlag = false
        var repeatable = false
    }

    /// The long options `init(quicklyParsing:)` reads; `RunOptionsTests` checks that each is one
    /// of `RunCommand`'s.
    private static let quickOptions: [String: Kind] = [
        "--concurrency": Kind(), "--job": Kind(repeatable: true), "--log-format": Kind(), "--log-file": Kind(),
        "--progress": Kind(), "--no-resume": Kind(isFlag: true), "--reset-incremental": Kind(repeatable: true),
        "--offline": Kind(isFlag: true), "--metrics-file": Kind(), "--metrics-push": Kind(),
        "--fail-fast": Kind(isFlag: true), "--max-time": Kind(),
        "--dry-run": Kind(isFlag: true), "--state-dir": Kind(), "--shard": Kind(),
    ]

    static var quickOptionNames: [String] { quickOptions.keys.sorted() }

    private mutating func setFlag(_ name: String) {
        switch name {
        case "--no-resume": noResume = true
        case "--offline": offline = true
        case "--dry-run": dryRun = true
        default: failFast = true  // "--fail-fast", the one flag of `quickOptions` left
        }
    }

    /// Sets the option `name` from `value`; false when the value is not one it takes.
    private mutating func set(_ name: String, to value: String) -> Bool {
        switch name {
        case "--concurrency":
            guard let number = Int(value) else { return false }
            concurrency = number
        case "--job": jobs.append(value)
        case "--log-format":
            guard let format = RunInvocation.LogFormat(rawValue: value) else { return false }
            logFormat = format
        case "--log-file": logFile = value
        case "--progress":
            guard let mode = RunInvocation.ProgressMode(rawValue: value) else { return false }
            progress = mode
        case "--reset-incremental": resetIncremental.append(value)
        case "--metrics-file": metricsFile = value
        case "--metrics-push": metricsPush = value
        case "--max-time": maxTime = value
        case "--state-dir": stateDir = value
        case "--shard": shard = value
        default: return false
        }
        return true
    }

    /// What `RunCommand.validate()` checks once ArgumentParser has read the options.
    func validate() throws {
        if let concurrency, concurrency < 1 { throw ValidationError("--concurrency must be at least 1") }
        if let metricsPush, URL(string: metricsPush)?.host == nil || !(metricsPush.hasPrefix("http://") || metricsPush.hasPrefix("https://")) {
            throw ValidationError("--metrics-push takes a Pushgateway's http:// or https:// URL, got '\(metricsPush)'")
        }
        if let maxTime, DurationGrammar.parse(maxTime) == nil {
            throw ValidationError("--max-time takes a duration such as 30s, 5m or 1h, got '\(maxTime)'")
        }
        _ = try reports()
    }

    /// `--report junit a.xml --report json b.json` as (format, path) pairs.
    func reports() throws -> [(format: RunReport.Format, path: String)] {
        guard report.count % 2 == 0 else { throw ValidationError("--report takes a format (junit or json) and a path") }
        return try stride(from: 0, to: report.count, by: 2).map { index in
            guard let format = RunReport.Format(rawValue: report[index]) else {
                throw ValidationError("--report takes junit or json, got '\(report[index])'")
            }
            return (format, report[index + 1])
        }
    }

    /// The run these options ask for; `prefetch` is what `CommandLineEntry.run()` began loading.
    func invocation(prefetch: RunPrefetch?) throws -> RunInvocation {
        var invocation = RunInvocation(jobsFile: jobsFile)
        invocation.prefetch = prefetch
        invocation.concurrency = concurrency
        invocation.jobs = jobs
        invocation.dryRun = dryRun
        invocation.logFormat = logFormat
        invocation.logFile = logFile
        invocation.progress = progress
        invocation.stateDir = stateDir
        invocation.failFast = failFast
        invocation.maxTime = maxTime.flatMap(DurationGrammar.parse)
        invocation.noResume = noResume
        invocation.resetIncremental = resetIncremental
        invocation.offline = offline
        invocation.reports = try reports()
        invocation.metricsFile = metricsFile
        invocation.metricsPush = metricsPush
        if let shard {
            do {
                invocation.shard = try Shard(parsing: shard)
            } catch {
                throw ValidationError(error.message)
            }
        }
        return invocation
    }
}
