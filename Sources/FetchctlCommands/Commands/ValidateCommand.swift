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
        let status = Self.check(files, format: format)
        if status != .success { throw ExitCode(status.rawValue) }
    }

    /// Checks `files`, prints the diagnostics and (as text) the summary: what `run` does.
    static func check(_ files: [String], format: DiagnosticRenderer.Format) -> ExitStatus {
        var config = ConfigLoader(mode: .validate).load(files)
        let fromDataFiles = config.checkDataFiles()
        let renderer = DiagnosticRenderer(sources: config.sources)
        Output.stdout(renderer.render(config.diagnostics, format: format))
        if format == .text {
            Output.stderr(ValidationSummary(config: config, fileCount: files.count, dataFileJobs: fromDataFiles).text + "\n")
        }
        return config.hasErrors ? .invalidConfig : .success
    }

    /// The files and format of `fetchctl validate ARGUMENTS` (the arguments after `validate`), read
    /// without ArgumentParser, as `RunOptions(quicklyParsing:)` reads `run`'s: files, and at most
    /// one `--format` with a known value (`--format F` or `--format=F`). ArgumentParser's parse was
    /// 14 of a small file's `validate`'s 30 million instructions (its reflection over the command's
    /// properties made the runtime walk the binary's conformance records some thirty times). Nil
    /// for anything else (no file, `help`, another option, a repeated `--format`, a value it
    /// refuses), which ArgumentParser reads and reports as before (`ValidateQuickReaderTests`).
    static func quicklyParsing(_ arguments: [String]) -> (files: [String], format: DiagnosticRenderer.Format)? {
        var files: [String] = []
        var format: DiagnosticRenderer.Format?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-") else {
                guard !argument.isEmpty, argument != "help" else { return nil }
                files.append(argument)
                continue
            }
            guard format == nil else { return nil }
            let value: String
            if argument == "--format" {
                guard index < arguments.count else { return nil }
                value = arguments[index]
                index += 1
            } else if argument.hasPrefix("--format=") {
                value = String(argument.dropFirst("--format=".count))
            } else {
                return nil
            }
            guard let known = DiagnosticRenderer.Format(rawValue: value) else { return nil }
            format = known
        }
        guard !files.isEmpty else { return nil }
        return (files, format ?? .text)
    }
}

extension DiagnosticRenderer.Format: ExpressibleByArgument {}
