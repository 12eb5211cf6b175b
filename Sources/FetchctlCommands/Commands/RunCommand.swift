import Foundation
import ArgumentParser
import FetchKit

struct RunCommand: AsyncParsableCommand {
    /// Set by `CommandLineEntry.run()` when it parses `fetchctl run FILE …` with this command as the root
    /// (set once, before parsing begins). The root is then named `fetchctl run`, with the usage
    /// line ArgumentParser writes for it as `Fetchctl`'s subcommand, so that errors read the same
    /// either way; and it has a super command's name, which is what tells ArgumentParser not to
    /// parse the arguments twice more looking for `--generate-completion-script` (that flag is
    /// `fetchctl`'s, and its command lines never come here).
    nonisolated(unsafe) static var parsedAsRoot = false

    /// What ArgumentParser prints as the usage of `fetchctl run` (`RunCommandAsRootTests` checks it).
    static let usageAsRoot = "fetchctl run [<options>] <jobs-file>"

    static var configuration: CommandConfiguration {
        guard parsedAsRoot else { return subcommandConfiguration }
        var configuration = subcommandConfiguration
        configuration.commandName = "fetchctl run"
        configuration.usage = usageAsRoot
        configuration._superCommandName = "fetchctl"
        return configuration
    }

    private static let subcommandConfiguration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the jobs of a jobs file.",
        discussion: """
        Results go to disk (output_dir), the log to stderr (or --log-file), nothing to stdout except
        --dry-run's plan. Run again after a failure or an interruption: downloads continue from their
        .part files, finished and unchanged downloads are up to date. Saves go through the response
        cache (state_dir/cache): fresh answers are served without a request, stale ones revalidated,
        and --offline serves everything from it. Exit codes: 0 every job succeeded,
        1 a job failed or was skipped, 2 invalid config, 64 bad command line, 75 another run holds the state directory or the network stayed down past settings.network.max_wait (jobs offline, .part files kept: run again later), 130/143 interrupted by SIGINT/SIGTERM.

        Examples:
          fetchctl run jobs.yaml
          fetchctl run jobs.yaml --job commits --dry-run
          fetchctl run jobs.yaml --log-format json --log-file run.log --max-time 10m
          fetchctl run jobs.yaml --report junit results.xml
          fetchctl run jobs.yaml --offline
        """
    )

    @Argument(help: "The jobs file.")
    var jobsFile: String

    @Option(help: "Jobs in flight at once (default: settings.concurrency, 8).")
    var concurrency: Int?

    @Option(name: .customLong("job"), help: ArgumentHelp("Run only this job and what it needs; repeatable.", valueName: "id"))
    var jobs: [String] = []

    @Flag(help: "Print the plan and every request as cURL (secrets redacted); send nothing.")
    var dryRun = false

    @Option(help: "Log format: text (for people) or json (one object a line).")
    var logFormat: RunInvocation.LogFormat = .text

    @Option(help: "Write the log to this file (appended) instead of stderr.")
    var logFile: String?

    @Option(help: "Live progress on stderr: auto (when it is a terminal), always, never.")
    var progress: RunInvocation.ProgressMode = .auto

    @Option(help: "Where run state lives (default: settings.state_dir).")
    var stateDir: String?

    @Flag(help: "Ignore .part files and recorded validators: download everything from the start.")
    var noResume = false

    @Option(name: .customLong("reset-incremental"),
            help: ArgumentHelp("Forget an incremental job's cursor, so this run fetches from its initial value; repeatable.", valueName: "job"))
    var resetIncremental: [String] = []

    @Flag(help: "Answer every job from the response cache only and open no connection; a job with nothing stored fails (not_cached).")
    var offline = false

    @Option(parsing: .upToNextOption, help: ArgumentHelp("Write a report when the run ends: junit PATH or json PATH; repeatable.",
                                                         valueName: "format path"))
    var report: [String] = []

    @Option(help: ArgumentHelp("When the run ends, write its metrics in Prometheus's text format to this file (atomically), for node_exporter's textfile collector.",
                               valueName: "path"))
    var metricsFile: String?

    @Option(help: ArgumentHelp("When the run ends, push its metrics to this Pushgateway (e.g. http://pushgateway:9091), grouped by jobs file and shard.",
                               valueName: "url"))
    var metricsPush: String?

    @Flag(help: "Stop at the first failed job: cancel running jobs, start no more.")
    var failFast = false

    @Option(help: ArgumentHelp("Run only shard I of N (1-based; a stable hash of job ids, a job with what it needs), or index-env=VAR/N with VAR holding a 0-based index (Kubernetes' JOB_COMPLETION_INDEX). State goes to state_dir/shard-I-of-N.",
                               valueName: "I/N"))
    var shard: String?

    @Option(help: ArgumentHelp("Stop starting jobs and cancel running ones after this long (e.g. 90s, 10m); exit 1.", valueName: "duration"))
    var maxTime: String?

    /// Begun by `CommandLineEntry.run()` before the command line is parsed; nil unless it looks like
    /// `run FILE` without `--dry-run`, `--state-dir` or `--shard` (`RunPrefetch.guessJobsFile`).
    static let prefetch = RunPrefetch.begin()

    /// The options as plain values, as `RunOptions(quicklyParsing:)` reads them too.
    var options: RunOptions {
        var options = RunOptions(jobsFile: jobsFile)
        options.concurrency = concurrency
        options.jobs = jobs
        options.dryRun = dryRun
        options.logFormat = logFormat
        options.logFile = logFile
        options.progress = progress
        options.stateDir = stateDir
        options.noResume = noResume
        options.resetIncremental = resetIncremental
        options.offline = offline
        options.report = report
        options.metricsFile = metricsFile
        options.metricsPush = metricsPush
        options.failFast = failFast
        options.shard = shard
        options.maxTime = maxTime
        return options
    }

    func validate() throws {
        try options.validate()
    }

    func run() async throws {
        let invocation = try options.invocation(prefetch: Self.prefetch)
        let status = await invocation.perform(stdout: .standardOutput, stderr: .standardError)
        if status != .success { throw ExitCode(status.rawValue) }
    }
}

extension RunInvocation.LogFormat: ExpressibleByArgument {}
extension RunInvocation.ProgressMode: ExpressibleByArgument {}
