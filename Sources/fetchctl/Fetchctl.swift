import ArgumentParser
import FetchKit

@main
struct Fetchctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetchctl",
        abstract: "A declarative batch HTTP fetcher: YAML routes and jobs, checked before anything touches the network.",
        discussion: """
        Exit codes: 0 success, 1 a job failed, 2 invalid config, 64 bad command line.
        Config reference: docs/configuration.md. JSON Schemas: `fetchctl schema routes|jobs`.
        """,
        version: FetchKitVersion.current,
        subcommands: [ValidateCommand.self, RoutesCommand.self, RenderCommand.self, SchemaCommand.self]
    )
}
