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
            && lhs.proxyURL == rhs.proxyURL && lhs.noProxy == rhs.noProxy
            && lhs.rateLimits.map(\.host) == rhs.rateLimits.map(\.host) && lhs.rateLimits.map(\.rate) == rhs.rateLimits.map(\.rate)
    }
}

/// One entry of `jobs:` as written (before `matrix` expansion).
public struct JobSpec: Sendable {
    public enum Target: Sendable {
        /// `route: service.route`
        case route(String, SourceLocation)
        /// `url:` an ad-hoc request with its own method and request keys.
        case url(String, method: HTTPMethod, request: RequestSpec)
    }

    public var id: String
    public var description: String?
    public var target: Target
    /// Params in written order, each with the locations of its value and its key.
    public var params: [(name: String, value: ParameterValue, location: SourceLocation, keyLocation: SourceLocation)]
    public var matrix: [(key: String, values: [ParameterValue], location: SourceLocation)]
    public var needs: [(id: String, location: SourceLocation)]
    public var save: OutputPath?
    public var download: OutputPath?
    /// `save_headers:` the status line and response headers, as `curl -D` writes them.
    public var saveHeaders: OutputPath?
    public var checksum: Checksum?
    /// `from:` one job per record of a data file, made as the run goes.
    public var from: DataFileSource?
    /// `key:` the id suffix of a data-file job, `page[<key>]` (default: the record number).
    public var key: OutputPath?
    public var behaviour: Behaviour
    public var location: SourceLocation
    /// The directory of the file the job came from (for relative `file:` bodies).
    public var baseDirectory: String
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
