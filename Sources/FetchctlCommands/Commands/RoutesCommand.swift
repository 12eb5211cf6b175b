import ArgumentParser
import FetchKit

struct RoutesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "routes",
        abstract: "List the routes of a file and its includes: name, method, URL template, params.",
        discussion: """
        Examples:
          fetchctl routes examples/github/github.routes.yaml
          fetchctl routes examples/github/jobs.yaml
        """
    )

    @Argument(help: "A route file, or a jobs file (its included routes are listed).")
    var file: String

    func run() throws {
        let config = ConfigLoader(mode: .validate).load([file])
        Output.diagnostics(of: config)
        if config.hasErrors { throw ExitCode(ExitStatus.invalidConfig.rawValue) }
        Output.stdout(RouteTable.render(config.orderedRoutes))
    }
}
