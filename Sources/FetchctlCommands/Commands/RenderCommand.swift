import ArgumentParser
import FetchKit

struct RenderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Print the request a route builds, as a cURL command or raw HTTP; secrets hidden.",
        discussion: """
        Builds the request without sending it. Authorization, cookies, URL userinfo and values from
        secret-named ${VAR}s (*TOKEN*, *SECRET*, *PASSWORD*, *KEY*) print as <redacted> unless
        --show-secrets is given. Array and object params take JSON text.

        Examples:
          fetchctl render examples/github/github.routes.yaml github.search_repositories --param query=language:swift
          fetchctl render routes.yaml list_commits --param owner=Alamofire --param repo=Alamofire --format http
          fetchctl render routes.yaml issues --page 3
        """
    )

    @Argument(help: "A route file, or a jobs file that includes it.")
    var file: String

    @Argument(help: "The route: service.route, or a route name that only one service has.")
    var route: String

    @Option(name: .customLong("param"), help: ArgumentHelp("A param value; repeat for each param.", valueName: "name=value"))
    var params: [String] = []

    @Option(help: "Output format: curl or http.")
    var format: RequestRenderer.Format = .curl

    @Option(help: "For a paginated route, the request of page N (offset and page numbers; other styles show page 1 only).")
    var page: Int?

    @Flag(help: "Print secrets instead of <redacted>.")
    var showSecrets = false

    func run() throws {
        var given: [String: ParameterValue] = [:]
        for argument in params {
            guard let (name, value) = ParamArgument.parse(argument) else {
                throw ValidationError("--param takes name=value, got '\(argument)'")
            }
            given[name] = value
        }
        let config = ConfigLoader(mode: .validate).load([file])
        Output.diagnostics(of: config)
        if config.hasErrors { throw ExitCode(ExitStatus.invalidConfig.rawValue) }
        guard let compiled = config.route(named: route) else {
            let names = config.orderedRoutes.map(\.name)
            let hint = EditDistance.hint(for: route, among: names).map { " (\($0))" } ?? ""
            throw ValidationError("unknown route '\(route)'\(hint); routes: \(names.joined(separator: ", "))")
        }
        let bound: [String: ParameterValue]
        switch compiled.bind(given) {
        case .success(let values): bound = values
        case .failure(let errors): throw ValidationError(errors.description)
        }
        let behaviour = compiled.behaviour.merged(over: config.jobsFile?.settings.behaviour ?? Behaviour())
        let router = Router(route: compiled, params: bound, behaviour: behaviour)
        let request: BuiltRequest
        if let page {
            guard let pagination = compiled.spec?.pagination else { throw ValidationError("route \(compiled.name) does not paginate; --page needs a paginate block") }
            do {
                request = try router.makeRequest(page: page, of: pagination)
            } catch let error as RequestBuildError {
                throw ValidationError(error.message)
            }
        } else {
            request = try router.makeRequest()
        }
        let renderer = RequestRenderer(redactor: showSecrets ? .none : config.redactor)
        Output.stdout(try renderer.render(request, format: format, tls: behaviour.tls,
                                          httpVersion: config.jobsFile?.settings.httpVersion ?? .auto))
    }
}

extension RequestRenderer.Format: ExpressibleByArgument {}
