import ArgumentParser
import FetchKit

struct Fetchctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetchctl",
        abstract: "A declarative batch HTTP fetcher: YAML routes and jobs, checked before anything touches the network.",
        discussion: """
        Exit codes: 0 success, 1 a job failed, 2 invalid config, 64 bad command line, 75 try again later (another run holds the state directory, or the network stayed down past settings.network.max_wait), 130/143 interrupted by SIGINT/SIGTERM.
        Config reference: docs/configuration.md. JSON Schemas: `fetchctl schema routes|jobs`.
        """,
        version: FetchKitVersion.current,
        subcommands: [RunCommand.self, DemoCommand.self, StatusCommand.self, CacheCommand.self, ReportCommand.self, ValidateCommand.self, TestServerCommand.self, RoutesCommand.self, RenderCommand.self, SchemaCommand.self]
    )
}
