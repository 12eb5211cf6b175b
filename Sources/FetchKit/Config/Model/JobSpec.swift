/// A jobs file: what to fetch, how many at once, and where results land (SPEC §2.3).
public struct JobsFile: Sendable {
    public var path: String
    public var settings: Settings
    public var jobs: [JobSpec]
}

/// `settings:` of a jobs file. Defaults live here, in one place.
public struct Settings: Sendable, Equatable {
    public var concurrency = 8
    public var perHost = 4
    public var rateLimits: [(host: String, rate: Rate)] = []
    /// Absolute, resolved against the jobs file's directory.
    public var outputDir: String
    /// Absolute, resolved against the jobs file's directory.
    public var stateDir: String
    public var failFast = false
    /// `settings.cache.max_size`: the response cache is pruned to this many bytes (least recently
    /// used first) at the end of each run. Default 1 GiB.
    public var cacheMaxSize: Int64 = 1 << 30
    /// `settings.cache.dir`: where the response cache lives; nil is `state_dir/cache`. Absolute.
    public var cacheDir: String?
    /// `settings.network.max_wait`: how long jobs wait for a lost network (from `network.lost`)
    /// before failing with `offline`. Default 5 minutes.
    public var networkMaxWait: Duration = .seconds(300)
    /// `settings.download.segments`: connections per download where neither the job nor its route
    /// says (1: one connection, as curl).
    public var downloadSegments = 1
    /// `settings.http_version`: `auto` (HTTP/2 over TLS where the server offers it) or `1.1`.
    public var httpVersion = AsyncHTTPClientTransport.HTTPVersion.auto
    /// `settings.proxy.url`: the proxy for every request, instead of the environment's
    /// (`HTTPS_PROXY`, …); "" for none. nil reads the environment.
    public var proxyURL: String?
    /// `settings.proxy.no_proxy`: hosts that go direct, instead of `NO_PROXY`; nil reads it.
    public var noProxy: [String]?
    /// The lowest layer of behaviour that config files set.
    public var behaviour = Behaviour()

    public init(outputDir: String, stateDir: String) {
        self.outputDir = outputDir
        self.stateDir = stateDir
    }

    public static func == (lhs: Settings, rhs: Settings) -> Bool {
        lhs.concurrency == rhs.concurrency && lhs.perHost == rhs.perHost && lhs.outputDir == rhs.outputDir
            && lhs.stateDir == rhs.stateDir && lhs.failFast == rhs.failFast && lhs.behaviour == rhs.behaviour
            && lhs.cacheMaxSize == rhs.cacheMaxSize && lhs.cacheDir == rhs.cacheDir && lhs.networkMaxWait == rhs.networkMaxWait && lhs.httpVersion == rhs.httpVersion
            && lhs.proxyURL == rhs.proxyURL && lhs.noProxy == rhs.noProxy && lhs.downloadSegments == rhs.downloadSegments
            && lhs.rateLimits.map(\.host) == rhs.rateLimits.map(\.host) && lhs.rateLimits.map(\.rate) == rhs.rateLimits.map(\.rate)
    }
}

/// One entry of `jobs:` as written (before `matrix` expansion).
///
/// A class, written once by the reader and never changed: every expansion of the entry (and every
/// job of a data file) refers to this one copy. As a struct it was about 500 bytes, copied into each
/// of a 100,000-job file's expansions.
public final class JobSpec: Sendable {
    public enum Target: Sendable {
        /// `route: service.route`
        case route(String, SourceLocation)
        /// `url:` an ad-hoc request with its own method and request keys.
        case url(String, method: HTTPMethod, request: RequestSpec)
    }

    public let id: String
    public let target: Target
    /// Params in written order, each with the locations of its value and its key.
    public let params: [(name: String, value: ParameterValue, location: SourceLocation, keyLocation: SourceLocation)]
    public let matrix: [(key: String, values: [ParameterValue], location: SourceLocation)]
    public let needs: [(id: String, location: SourceLocation)]
    public let save: OutputPath?
    public let behaviour: Behaviour
    public let location: SourceLocation
    /// The directory of the file the job came from (for relative `file:` bodies).
    public let baseDirectory: String
    /// The keys most jobs leave out, in a box that only jobs with one of them carry (280 bytes
    /// fewer for every other job).
    private let extras: Extras?

    public var description: String? { extras?.description }
    public var download: OutputPath? { extras?.download }
    /// `save_headers:` the status line and response headers, as `curl -D` writes them.
    public var saveHeaders: OutputPath? { extras?.saveHeaders }
    public var checksum: Checksum? { extras?.checksum }
    /// `from:` one job per record of a data file, made as the run goes.
    public var from: DataFileSource? { extras?.from }
    /// `key:` the id suffix of a data-file job, `page[<key>]` (default: the record number).
    public var key: OutputPath? { extras?.key }
    /// `download: {segments: N}`: connections for this job's download, and where it was written.
    public var downloadSegments: (count: Int, location: SourceLocation)? { extras?.downloadSegments }
    /// `paginate:` of this job, over its route's.
    public var pagination: Pagination? { extras?.pagination }
    /// `paginate: false`: one request, though the route paginates.
    public var paginationOff: Bool { extras?.paginationOff ?? false }
    /// `save_items:` the records of every page, as JSON Lines.
    public var saveItems: OutputPath? { extras?.saveItems }
    /// `capture:` values from the response for later jobs (`{{jobs.<id>.<name>}}`).
    public var captures: [CaptureSpec] { extras?.captures ?? [] }
    /// `for_each:` one job per record another job's responses hold.
    public var forEach: ForEachSpec? { extras?.forEach }
    /// `incremental:` fetch only what changed since the last successful run.
    public var incremental: IncrementalSpec? { extras?.incremental }
    /// The prefix of a record's placeholders: `row.` for a data file, `<as>.` for a fan-out.
    public var recordPrefix: String? { from != nil ? "row." : forEach.map { $0.name + "." } }

    private final class Extras: Sendable {
        let description: String?
        let download: OutputPath?
        let saveHeaders: OutputPath?
        let checksum: Checksum?
        let from: DataFileSource?
        let key: OutputPath?
        let downloadSegments: (count: Int, location: SourceLocation)?
        let pagination: Pagination?
        let saveItems: OutputPath?
        let captures: [CaptureSpec]
        let forEach: ForEachSpec?
        let incremental: IncrementalSpec?
        let paginationOff: Bool

        init(description: String?, download: OutputPath?, saveHeaders: OutputPath?, checksum: Checksum?, from: DataFileSource?, key: OutputPath?,
             downloadSegments: (count: Int, location: SourceLocation)?, pagination: Pagination?, saveItems: OutputPath?,
             captures: [CaptureSpec], forEach: ForEachSpec?, incremental: IncrementalSpec?, paginationOff: Bool) {
            self.description = description
            self.download = download
            self.saveHeaders = saveHeaders
            self.checksum = checksum
            self.from = from
            self.key = key
            self.downloadSegments = downloadSegments
            self.pagination = pagination
            self.saveItems = saveItems
            self.captures = captures
            self.forEach = forEach
            self.incremental = incremental
            self.paginationOff = paginationOff
        }
    }

    init(id: String, description: String?, target: Target,
         params: [(name: String, value: ParameterValue, location: SourceLocation, keyLocation: SourceLocation)],
         matrix: [(key: String, values: [ParameterValue], location: SourceLocation)], needs: [(id: String, location: SourceLocation)],
         save: OutputPath?, download: OutputPath?, saveHeaders: OutputPath?, checksum: Checksum?, from: DataFileSource?, key: OutputPath?,
         behaviour: Behaviour, location: SourceLocation, baseDirectory: String, downloadSegments: (count: Int, location: SourceLocation)? = nil,
         pagination: Pagination? = nil, saveItems: OutputPath? = nil, captures: [CaptureSpec] = [],
         forEach: ForEachSpec? = nil, incremental: IncrementalSpec? = nil, paginationOff: Bool = false) {
        self.id = id
        self.target = target
        self.params = params
        self.matrix = matrix
        self.needs = needs
        self.save = save
        self.behaviour = behaviour
        self.location = location
        self.baseDirectory = baseDirectory
        let hasExtras = description != nil || download != nil || saveHeaders != nil || checksum != nil || from != nil || key != nil
            || pagination != nil || saveItems != nil || !captures.isEmpty || forEach != nil || incremental != nil || paginationOff
        extras = hasExtras ? Extras(description: description, download: download, saveHeaders: saveHeaders, checksum: checksum, from: from, key: key,
                                    downloadSegments: downloadSegments, pagination: pagination, saveItems: saveItems,
                                    captures: captures, forEach: forEach, incremental: incremental, paginationOff: paginationOff) : nil
    }
}

/// `for_each: {job: list_repos, items: "$[*]", as: repo}`: one job per record of another job's
/// responses (every page of a paginated one), its values as `{{repo.<name>}}`.
public struct ForEachSpec: Sendable {
    /// The entry whose responses hold the records.
    public var job: String
    public var items: JSONPath
    /// The placeholder prefix: `{{<as>.<name>}}`, `{{<as>.number}}`.
    public var name: String
    public var location: SourceLocation
    public var jobLocation: SourceLocation
}

/// `incremental: {param: since, from: "$.items[-1].updated_at", initial: "2026-01-01T00:00:00Z"}`:
/// the job sends `param` = the cursor, and once it has fully succeeded, the greatest value `from`
/// found in its responses becomes the next run's cursor.
public struct IncrementalSpec: Sendable {
    /// A route param of that name, else a query parameter (a dotted path into a JSON body).
    public var param: String
    public var from: JSONPath
    /// The cursor before the first successful run.
    public var initial: String
    public var location: SourceLocation

    /// The later of two cursor values: as numbers when both are, else as text (ISO 8601 times,
    /// written alike, order as text).
    public static func later(_ a: String, _ b: String) -> String {
        if let x = Double(a), let y = Double(b) { return y > x ? b : a }
        return b > a ? b : a
    }

    /// The greatest of the values `path` selects in `document` (by `later`); nil when none has text.
    static func greatest(_ path: JSONPath, in document: JSONValue) -> String? {
        path.select(in: document).compactMap(\.text).reduce(nil as String?) { best, value in best.map { later($0, value) } ?? value }
    }

    /// The greatest value `from` finds in one response.
    func greatest(in document: JSONValue) -> String? { Self.greatest(from, in: document) }
}

/// A `save:` or `download:` path template as written, with where it was written.
public struct OutputPath: Sendable, Equatable {
    public var template: String
    public var location: SourceLocation
}

/// `from: {file: titles.csv}` as written: the file's path as given and resolved, its format (from the
/// name, or `format:`), and where it was written.
public struct DataFileSource: Sendable {
    public var file: DataFile
    public var location: SourceLocation
}
