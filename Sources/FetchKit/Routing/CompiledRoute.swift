import Foundation

/// A route ready to build requests: its full URL template (base URL + path) and its behaviour
/// layered over its file's `defaults`. Ad-hoc jobs (`url:`) compile to one too.
public struct CompiledRoute: Sendable {
    /// `service.route`, or the job id for an ad-hoc request.
    public var name: String
    public var method: HTTPMethod
    /// The URL with `{{name}}` placeholders, e.g. `https://api.github.com/repos/{{owner}}/{{repo}}`.
    public var urlTemplate: String {
        didSet { urlParts = URLTemplateParts(urlTemplate) }
    }
    /// `urlTemplate` split at its `?` and parsed once, not for every request built.
    private(set) var urlParts: URLTemplateParts
    public var params: [ParamSpec]
    public var request: RequestSpec
    /// Route behaviour over the route file's `defaults`.
    public var behaviour: Behaviour
    public var download: DownloadOptions?
    /// The route as written; nil for an ad-hoc request.
    public var spec: RouteSpec? {
        get { specBox?.spec }
        set { specBox = newValue.map(SpecBox.init) }
    }
    /// `spec`, held by reference: ad-hoc requests, one per job, carry none, and inline it was
    /// nearly 200 bytes of every one of them.
    private var specBox: SpecBox?

    private final class SpecBox: Sendable {
        let spec: RouteSpec
        init(_ spec: RouteSpec) { self.spec = spec }
    }

    public var isAdHoc: Bool { specBox == nil }

    /// The route's `paginate`, read from its spec without copying the spec.
    public var pagination: Pagination? { specBox?.spec.pagination }

    public init(spec: RouteSpec, file: RouteFile) {
        name = spec.qualifiedName
        method = spec.method
        urlTemplate = Self.join(base: file.baseURL, path: spec.path)
        urlParts = URLTemplateParts(urlTemplate)
        params = spec.params
        request = spec.request
        behaviour = spec.behaviour.merged(over: file.defaults)
        download = spec.download
        specBox = SpecBox(spec)
    }

    /// An ad-hoc request (a job with `url:`); its placeholders are filled from the job's params.
    public init(adHocName: String, url: String, method: HTTPMethod, request: RequestSpec) {
        name = adHocName
        self.method = method
        urlTemplate = url
        urlParts = URLTemplateParts(url)
        params = []
        self.request = request
        behaviour = Behaviour()
        download = nil
        specBox = nil
    }

    static func join(base: String, path: String) -> String {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        return path.isEmpty ? base : base + (path.hasPrefix("/") ? path : "/" + path)
    }

    public func param(named name: String) -> ParamSpec? { params.first { $0.name == name } }

    /// Checks `given` params against the route: unknown names, missing required ones, types and
    /// constraints. Returns the coerced params with defaults filled in, or every problem found.
    public func bind(_ given: [String: ParameterValue]) -> Result<[String: ParameterValue], BindingErrors> {
        if isAdHoc { return .success(given) }
        var bound: [String: ParameterValue] = [:]
        var problems: [String] = []
        for name in given.keys.sorted() where param(named: name) == nil {
            let hint = EditDistance.suggestion(for: name, among: params.map(\.name)).map { " (did you mean '\($0)'?)" } ?? ""
            problems.append("unknown param '\(name)' for route '\(self.name)'\(hint)")
        }
        for spec in params {
            if let value = given[spec.name] {
                switch ParamChecker.check(value, against: spec) {
                case .success(let coerced): bound[spec.name] = coerced
                case .failure(let problem): problems.append("param '\(spec.name)' \(problem.message)")
                }
            } else if let value = spec.defaultValue {
                bound[spec.name] = value
            } else if spec.required {
                problems.append("missing required param '\(spec.name)' for route '\(name)'")
            }
        }
        return problems.isEmpty ? .success(bound) : .failure(BindingErrors(messages: problems))
    }
}

/// A URL template's path part (up to `?`) and query part, parsed.
struct URLTemplateParts: Sendable {
    var path: Template
    var query: Template?
    /// The scheme and authority (`https://host:port`) have no placeholder and name a host: every
    /// URL made from the template has that host, since the values filled in after it are
    /// percent-encoded (a path segment's `/`, `?`, `#` or `@` included), so `Router` need not ask
    /// each URL for its host again (Foundation parses it anew: 2,200 instructions a request).
    var hasLiteralHost: Bool

    init(_ template: String) {
        let split = template.firstIndex(of: "?")
        path = Template(String(template[..<(split ?? template.endIndex)]))
        query = split.map { Template(String(template[template.index(after: $0)...])) }
        hasLiteralHost = Self.literalAuthority(of: template).map { URL(string: $0 + "/") != nil && Self.namesHost($0) } ?? false
    }

    /// Whether `url` names a host: it starts with a scheme and `://`, and its authority without
    /// user info and port is not empty (`JobHost`'s reading of a URL's host). For a string
    /// Foundation parses as a URL, what `URL.host != nil` says of a URL with a scheme, read from
    /// the bytes instead of parsed again (2,200 instructions a request whose host comes from a
    /// value, such as a data file's row).
    static func namesHost(_ url: String) -> Bool {
        var url = url
        return url.withUTF8 { JobHost.hostRange(in: $0, complete: true) != nil }
    }

    /// `scheme://authority` of `template` when it has no placeholder; nil otherwise.
    static func literalAuthority(of template: String) -> String? {
        guard let separator = template.range(of: "://") else { return nil }
        let rest = template[separator.upperBound...]
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = template[..<end]
        guard !rest[..<end].isEmpty, !authority.contains("{{"), !authority.contains("${") else { return nil }
        return String(authority)
    }
}

/// The problems `CompiledRoute.bind` found, one message each.
public struct BindingErrors: Error, Sendable, CustomStringConvertible {
    public var messages: [String]
    public var description: String { messages.joined(separator: "\n") }
}
