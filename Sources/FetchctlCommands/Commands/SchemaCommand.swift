import ArgumentParser
import FetchKit
import FetchKitSchemas

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema (draft 2020-12) of route files or jobs files.",
        discussion: """
        Point yaml-language-server at it for completion and docs in editors:
          # yaml-language-server: $schema=schemas/jobs.schema.json

        Examples:
          fetchctl schema routes > routes.schema.json
          fetchctl schema jobs
        """
    )

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case routes, jobs
    }

    @Argument(help: "routes or jobs")
    var kind: Kind

    func run() {
        Output.stdout(kind == .routes ? JSONSchemas.routes : JSONSchemas.jobs)
    }
}
