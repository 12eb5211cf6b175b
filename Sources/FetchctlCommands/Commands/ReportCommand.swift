import ArgumentParser
import FetchKit
import Foundation

/// `fetchctl report merge`: one report from several runs' JSON reports (a sharded batch's).
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Combine run reports.",
        subcommands: [Merge.self]
    )

    struct Merge: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "merge",
            abstract: "Merge the JSON reports of several runs (a batch's shards) into one JSON or JUnit report.",
            discussion: """
            Reads the files `run --report json PATH` writes; a job in two reports keeps the later one's result (with a warning). The merged exit_code is the highest of the runs', and the command exits with it, so a CI step fails when a shard did.

            Examples:
              fetchctl report merge all.json shard-*.json
              fetchctl report merge --format junit all.xml shard-*.json
            """
        )

        @Option(help: "json or junit (default: junit for an .xml output, json otherwise).")
        var format: RunReport.Format?

        @Argument(help: "The merged report to write.")
        var output: String

        @Argument(help: "JSON reports to merge, in order.")
        var reports: [String]

        func validate() throws {
            if reports.isEmpty { throw ValidationError("give at least one JSON report to merge") }
        }

        func run() throws {
            var inputs: [(name: String, data: Data)] = []
            for path in reports {
                guard let data = FileManager.default.contents(atPath: path) else {
                    Output.stderr("error: cannot read '\(path)'\n")
                    throw ExitCode(ExitStatus.invalidConfig.rawValue)
                }
                inputs.append((path, data))
            }
            let merged: RunReport.Merged
            do {
                merged = try RunReport.merge(inputs)
            } catch {
                Output.stderr("error: \((error as? FetchError)?.message ?? "\(error)")\n")
                throw ExitCode(ExitStatus.invalidConfig.rawValue)
            }
            for job in Set(merged.duplicates).sorted() {
                Output.stderr("warning: job '\(job)' is in more than one report; the later report's result is kept\n")
            }
            let format = format ?? (output.lowercased().hasSuffix(".xml") ? .junit : .json)
            do {
                // The reports were redacted when written.
                try RunReport.write(merged.summary, jobsFile: merged.jobsFile, exitCode: merged.exitCode, format: format, to: output,
                                    redactor: .none)
            } catch {
                Output.stderr("error: \((error as? FetchError)?.message ?? "\(error)")\n")
                throw ExitCode(1)
            }
            let summary = merged.summary
            Output.stderr("\(reports.count) report\(reports.count == 1 ? "" : "s"), \(summary.jobCount) jobs: "
                          + "\(summary.count(.succeeded)) succeeded, \(summary.count(.failed)) failed, \(summary.count(.skipped)) skipped → \(output)\n")
            if merged.exitCode != 0 { throw ExitCode(merged.exitCode) }
        }
    }
}

extension RunReport.Format: ExpressibleByArgument {}
