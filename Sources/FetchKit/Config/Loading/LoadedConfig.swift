/// Everything the loader found in a set of config files: the typed model, the expanded jobs, and
/// every diagnostic. Nothing here has touched the network.
public struct LoadedConfig: Sendable {
    /// Every file read, for rendering diagnostics with their source lines.
    public var sources: [SourceFile] = []
    /// Diagnostics sorted by location.
    public var diagnostics: [Diagnostic] = []
    public var routeFiles: [RouteFile] = []
    /// Routes by qualified name (`service.route`), compiled with their file's base URL and defaults.
    public var routes: [String: CompiledRoute] = [:]
    /// The jobs file of the first root that has jobs, if any.
    public var jobsFile: JobsFile?
    /// Its jobs after `matrix` expansion, in file order (those from data files excepted).
    public var jobs: [ExpandedJob] = []
    /// Its `from:` entries, whose jobs are made from their data files as the run goes.
    public var dataFileJobs: [DataFileJobs] = []
    /// Resolved values that must never be printed.
    public var secrets: Set<String> = []
    /// Header names that carry credentials (from `auth: {header: …}`).
    public var secretHeaders: Set<String> = []

    public init() {}

    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

    /// A redactor for everything this config may print.
    public var redactor: Redactor { Redactor(secrets: secrets, secretHeaders: secretHeaders, learnt: learntSecrets) }
    /// Where secret captures go during a run (nil when no job captures a secret): every redactor
    /// made from this config shares it.
    public var learntSecrets: SecretValues?

    /// Routes in a stable order: by file, then as written.
    public var orderedRoutes: [CompiledRoute] {
        routeFiles.flatMap { file in file.routes.compactMap { routes[$0.qualifiedName] } }
    }

    /// The route named `name`: a qualified name, or a bare route name that only one service has.
    public func route(named name: String) -> CompiledRoute? {
        if let route = routes[name] { return route }
        let matches = routes.values.filter { $0.spec?.name == name }
        return matches.count == 1 ? matches[0] : nil
    }
}

/// One job after `matrix` expansion: `commits[repo=Alamofire]`.
///
/// The parts every expansion of one `jobs:` entry has in common (the spec, the route, the layered
/// behaviour) are held once, by reference: a 20,000-value matrix makes 20,000 small values, not
/// 20,000 copies of the route and its behaviour.
public struct ExpandedJob: Sendable {
    /// What the expansions of one `jobs:` entry share.
    /// Its route and behaviour are `Router.Parts`'s: every job of the entry's router holds this
    /// object, and a 100,000-entry jobs file has no second object per entry. Immutable.
    final class Common: Router.Parts, @unchecked Sendable {
        let spec: JobSpec
        /// The job's `paginate`, else its route's. Looked up, not stored: inline, the optional
        /// model was 200 bytes of every entry of a 100,000-entry jobs file.
        var pagination: Pagination? { spec.paginationOff ? nil : spec.pagination ?? route.pagination }
        /// The captures of other jobs this one uses (`{{jobs.<id>.<name>}}`).
        let captureUses: [CaptureUse]

        init(spec: JobSpec, route: CompiledRoute, behaviour: Behaviour, captureUses: [CaptureUse] = []) {
            self.spec = spec
            self.captureUses = captureUses
            super.init(route: route, behaviour: behaviour)
        }
    }

    public var id: String
    /// This expansion's matrix values, in matrix order.
    public var matrix: [(key: String, value: ParameterValue)]
    /// Params after matrix interpolation and type coercion, route defaults filled in.
    public var params: [String: ParameterValue]
    /// Absolute output paths, inside `output_dir`.
    public var savePath: String?
    public var downloadPath: String?
    /// `save_headers`: where the status line and response headers go.
    public var headersPath: String?
    /// `save_items`: where a paginated job's records go, as JSON Lines.
    public var itemsPath: String?
    /// Expanded ids of the jobs this one needs.
    public var needs: [String]
    /// A data-file job's record, as `row.<name>` (see `DataFileJobs`); empty otherwise.
    public var bindings: [String: ParameterValue] = [:]
    let common: Common

    /// The `jobs:` entry as written.
    public var spec: JobSpec { common.spec }
    /// The route (or the ad-hoc request) this job runs.
    public var route: CompiledRoute { common.route }
    /// Fully layered behaviour: job > route > route file defaults > settings > built-in.
    public var behaviour: Behaviour { common.behaviour }
    /// How the job pages through results; nil for a job of one request.
    public var pagination: Pagination? { common.pagination }
    /// Made from a data file's record (`from:`, `for_each:`), not written out in the jobs file.
    var isFromDataFile: Bool { common.spec.from != nil || common.spec.forEach != nil }

    /// A router that builds this job's request; matrix values fill `{{matrix.key}}` in job headers.
    public var router: Router {
        var values: [String: ParameterValue]
        if params.isEmpty, matrix.isEmpty {
            values = bindings  // a data-file job's record alone: shared, not copied key by key
        } else {
            values = params
            for (key, value) in matrix { values["matrix.\(key)"] = value }
            for (key, value) in bindings { values[key] = value }
        }
        var router = Router(parts: common, params: values)
        // `incremental`: the cursor goes in the route's param of that name, else in the query (or
        // at that path of a JSON body).
        if let incremental = spec.incremental, let cursor = bindings[Self.incrementalCursorKey], route.param(named: incremental.param) == nil {
            router.overrides.append((incremental.param, cursor))
        }
        return router
    }

    /// The binding that holds an `incremental` job's cursor for this run.
    static let incrementalCursorKey = "incremental.cursor"
}
