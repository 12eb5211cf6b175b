import ArgumentParser
import FetchKit
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the last runs and each job's last outcome, from the state directory.",
        discussion: """
        The state directory is --state-dir, else the jobs file's settings.state_dir, else ./.fetchctl.

        Examples:
          fetchctl status jobs.yaml
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
        Output.stdout(try StatusReport(store: store, runLimit: runs).render(format))
    }
}

extension StatusReport.Format: ExpressibleByArgument {}
