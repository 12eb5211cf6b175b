import ArgumentParser
import FetchKit

struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check config files and report every problem at once, with file:line:column.",
        discussion: """
        Reads each file and everything it includes, and every record of the data files jobs come from
        (`from:`); touches no network. Unset ${VAR}s without a default are warnings here (CI has no
        secrets) and errors in `run`. A data file's problems are reported at most 100 per file, then
        counted. Exit 0 when there are no errors (warnings allowed), 2 otherwise.

        Examples:
          fetchctl validate examples/github/jobs.yaml
          fetchctl validate --format github routes/*.yaml
          fetchctl validate --format json jobs.yaml | jq '.[].code'
        """
    )

    @Option(help: "Output format: text (compiler style), json (one array), github (Actions annotations).")
    var format: DiagnosticRenderer.Format = .text

    @Argument(help: "Route and jobs files to check.")
    var files: [String]

    func run() throws {
        var config = ConfigLoader(mode: .validate).load(files)
        let fromDataFiles = config.checkDataFiles()
        let renderer = DiagnosticRenderer(sources: config.sources)
        Output.stdout(renderer.render(config.diagnostics, format: format))
        if format == .text {
            Output.stderr(ValidationSummary(config: config, fileCount: files.count, dataFileJobs: fromDataFiles).text + "\n")
        }
        if config.hasErrors { throw ExitCode(ExitStatus.invalidConfig.rawValue) }
    }
}

extension DiagnosticRenderer.Format: ExpressibleByArgument {}
