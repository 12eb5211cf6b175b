import ArgumentParser
import FetchKit
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Summarise the last runs from the state directory; list each job's last outcome with --jobs.",
        discussion: """
        The state directory is --state-dir, else the jobs file's settings.state_dir, else ./.fetchctl.
        Without --jobs: the recent runs and the last one's counts by outcome and error code, its
        first failures and its timing (read from the run's own record: instant at any batch size).
        With --jobs: every job's last outcome, one line each (JSON Lines with --format json),
        optionally only those with --outcome. Job results are kept for the last 10 runs.

        Examples:
          fetchctl status jobs.yaml
          fetchctl status jobs.yaml --jobs --outcome failed
          fetchctl status --state-dir /var/lib/fetchctl --format json
        """
    )

    @Argument(help: "A jobs file, to find its state directory.")
    var jobsFile: String?

    @Option(help: "The state directory.")
    var stateDir: String?

    @Option(help: "Output format: text or json.")
    var format: StatusReport.Format = .text

    @Option(help: "How many runs to show.")
    var runs = 10

    @Flag(help: "List every job's last outcome instead of the summary.")
    var jobs = false

    @Option(help: "With --jobs: only jobs with this outcome (succeeded, failed, skipped, up_to_date, cached).")
    var outcome: String?

    func run() throws {
        var directory = stateDir ?? ".fetchctl"
        if stateDir == nil, let jobsFile {
            let config = ConfigLoader(mode: .validate).load([jobsFile])
            if config.hasErrors {
                Output.diagnostics(of: config)
                throw ExitCode(ExitStatus.invalidConfig.rawValue)
            }
            directory = config.jobsFile?.settings.stateDir ?? directory
        }
        guard FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent("state.sqlite")) else {
            Output.stderr("no runs recorded in \(directory) yet\n")
            return
        }
        let store = try StateStore(directory: directory)
        if let outcome, JobResult.Outcome(rawValue: outcome) == nil {
            throw ValidationError("--outcome takes one of \(JobResult.Outcome.allCases.map(\.rawValue).joined(separator: ", ")), not '\(outcome)'")
        }
        if jobs {
            let out = FileHandle.standardOutput
            var buffer = Data()
            try StatusReport.forEachJob(in: store, outcome: outcome, format: format) { line in
                buffer.append(contentsOf: line.utf8)
                if buffer.count >= 1 << 16 {
                    out.write(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            out.write(buffer)
            return
        }
        if outcome != nil { throw ValidationError("--outcome filters --jobs; add --jobs") }
        Output.stdout(try StatusReport(store: store, runLimit: runs).render(format))
    }
}

extension StatusReport.Format: ExpressibleByArgument {}
