/// A route file: one service's endpoints as data (SPEC §2.1).
public struct RouteFile: Sendable {
    public var path: String
    public var service: String
    /// The base URL after `${VAR}` resolution.
    public var baseURL: String
    public var description: String?
    /// Behaviour for every route of the file; each route may override.
    public var defaults: Behaviour
    public var routes: [RouteSpec]
}

/// One endpoint: method, path, typed params, where parameters go, and behaviour.
public struct RouteSpec: Sendable {
    public var service: String
    public var name: String
    public var method: HTTPMethod
    /// The path template, e.g. `/repos/{{owner}}/{{repo}}/commits`.
    public var path: String
    public var description: String?
    /// Declared params plus implicit ones (path placeholders not declared: required strings).
    public var params: [ParamSpec]
    public var request: RequestSpec
    public var behaviour: Behaviour
    public var download: DownloadOptions?
    /// `paginate:`: the route's results come a page at a time (jobs may override it).
    public var pagination: Pagination?
    public var location: SourceLocation

    /// `service.route`, the name jobs use.
    public var qualifiedName: String { "\(service).\(name)" }

    public func param(named name: String) -> ParamSpec? { params.first { $0.name == name } }
}

/// The parts of a route (or an ad-hoc job) that build the request besides method and URL.
///
/// The fields live in a shared, copy-on-write box, like `Behaviour`'s: an ad-hoc job carries one in
/// its target and one in its compiled route, and most set nothing, so they share the one empty box
/// (inline, the fields were 64 bytes twice over for each of 100,000 jobs).
public struct RequestSpec: Sendable, Equatable {
    private final class Storage: @unchecked Sendable {
        var parameters: Parameters?
        var encoding: ParameterEncodingKind = .url
        var encodingOptions = EncodingOptions()
        var query: ParameterValue?
        var body: RawBody?

        init() {}

        init(copying other: Storage) {
            parameters = other.parameters
            encoding = other.encoding
            encodingOptions = other.encodingOptions
            query = other.query
            body = other.body
        }
    }

    /// Never changed while shared (see `unique`): that is what makes the box Sendable.
    private var storage = Self.emptyStorage
    private static let emptyStorage = Storage()

    private mutating func unique() {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
    }

    public var parameters: Parameters? {
        get { storage.parameters }
        set { unique(); storage.parameters = newValue }
    }
    public var encoding: ParameterEncodingKind {
        get { storage.encoding }
        set { unique(); storage.encoding = newValue }
    }
    public var encodingOptions: EncodingOptions {
        get { storage.encodingOptions }
        set { unique(); storage.encodingOptions = newValue }
    }
    /// `query:`: always in the URL, after the URL's own query.
    public var query: ParameterValue? {
        get { storage.query }
        set { unique(); storage.query = newValue }
    }
    public var body: RawBody? {
        get { storage.body }
        set { unique(); storage.body = newValue }
    }

    public init() {}

    public static func == (lhs: RequestSpec, rhs: RequestSpec) -> Bool {
        if lhs.storage === rhs.storage { return true }
        return lhs.parameters == rhs.parameters && lhs.encoding == rhs.encoding && lhs.encodingOptions == rhs.encodingOptions
            && lhs.query == rhs.query && lhs.body == rhs.body
    }

    public enum Parameters: Sendable, Equatable {
        case object(ParameterValue)
        case multipart([MultipartPartSpec])
    }
}

/// Where `parameters` go (SPEC §2.1, after Alamofire's encoders).
public enum ParameterEncodingKind: String, Sendable, CaseIterable {
    /// GET, HEAD, DELETE: the query string; other methods: a form body.
    case url
    case query, form, json, multipart
}

/// `encoding_options` for `url`, `query` and `form` (Alamofire's `URLEncodedFormEncoder` options).
public struct EncodingOptions: Sendable, Equatable {
    public var arrays: URLEncodedFormEncoder.ArrayEncoding?
    public var bools: URLEncodedFormEncoder.BoolEncoding?
    public var spaces: URLEncodedFormEncoder.SpaceEncoding?
    public var nested: URLEncodedFormEncoder.KeyPathEncoding?
    public var sortKeys: Bool?

    public init() {}

    /// The encoder these options describe, with Alamofire's defaults for what is unset.
    public var formEncoder: URLEncodedFormEncoder {
        URLEncodedFormEncoder(arrayEncoding: arrays ?? .brackets, boolEncoding: bools ?? .numeric,
                              spaceEncoding: spaces ?? .percentEscaped, keyPathEncoding: nested ?? .brackets,
                              alphabetizeKeyValuePairs: sortKeys ?? true)
    }
}

/// One part of a `multipart/form-data` body: a `value`, or a `file` read from disk when sent.
public struct MultipartPartSpec: Sendable, Equatable {
    public var name: String
    public var value: String?
    /// Relative paths are resolved against the config file's directory.
    public var file: String?
    public var filename: String?
    public var contentType: String?

    public init(name: String, value: String? = nil, file: String? = nil, filename: String? = nil, contentType: String? = nil) {
        self.name = name
        self.value = value
        self.file = file
        self.filename = filename
        self.contentType = contentType
    }
}

/// `body:`: a raw request body from text, a file, or base64.
public struct RawBody: Sendable, Equatable {
    public enum Source: Sendable, Equatable {
        case text(String)
        /// An absolute path (resolved against the config file's directory when loaded).
        case file(String)
        case base64(String)
    }

    public var source: Source
    public var contentType: String?

    public init(source: Source, contentType: String? = nil) {
        self.source = source
        self.contentType = contentType
    }
}

/// A route's `download:` block: the response streams to disk (SPEC §2.4).
public struct DownloadOptions: Sendable, Equatable {
    public var resumable: Bool
    /// `segments: N`: connections per download of this route (nil: the job's or the settings').
    public var segments: Int?

    public init(resumable: Bool = true, segments: Int? = nil) {
        self.resumable = resumable
        self.segments = segments
    }
}

/// A route's typed input.
public struct ParamSpec: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case string, integer, number, boolean, array, object
    }

    public var name: String
    public var type: Kind = .string
    public var required = false
    public var defaultValue: ParameterValue?
    public var enumValues: [ParameterValue]?
    public var minimum: Double?
    public var maximum: Double?
    public var pattern: String?
    public var description: String?
    /// True for a path placeholder that was not declared under `params`.
    public var isImplicit = false
    public var location: SourceLocation

    public init(name: String, location: SourceLocation) {
        self.name = name
        self.location = location
    }
}
