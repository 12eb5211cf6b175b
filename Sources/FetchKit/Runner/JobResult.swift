/// What one job came to. Jobs return results instead of throwing, so one failure never cancels
/// its siblings.
public struct JobResult: Sendable {
    public enum Outcome: String, Sendable, CaseIterable {
        case succeeded, failed, skipped
        case upToDate = "up_to_date"
        case cached
    }

    public var job: String
    public var outcome: Outcome
    /// The final HTTP status, when a response arrived.
    public var status: Int?
    /// Body bytes received.
    public var bytes: Int64
    public var attempts: Int
    /// Why it failed.
    public var error: FetchError?
    /// Why it was skipped.
    public var reason: String?
    public var duration: Duration
    /// Where its output landed.
    public var path: String?
    /// How the response cache answered (nil when it was not consulted: downloads, failures before it).
    public var cache: RequestMetrics.CacheUse?

    public init(job: String, outcome: Outcome, status: Int? = nil, bytes: Int64 = 0, attempts: Int = 0,
                error: FetchError? = nil, reason: String? = nil, duration: Duration = .zero, path: String? = nil,
                cache: RequestMetrics.CacheUse? = nil) {
        self.job = job
        self.outcome = outcome
        self.status = status
        self.bytes = bytes
        self.attempts = attempts
        self.error = error
        self.reason = reason
        self.duration = duration
        self.path = path
        self.cache = cache
    }

    /// The body came from the response cache (a hit, a `304`, a stale response) or, offline, from disk.
    public var isFromCache: Bool { outcome == .cached || (cache != nil && cache != .miss) }

    /// Succeeded, up to date or served from the cache: what `needs` waits for.
    public var isSuccess: Bool { outcome == .succeeded || outcome == .upToDate || outcome == .cached }
}

/// A finished run: the counts of every job's outcome (`tally`), the results of the jobs written
/// out in the jobs file in plan order (`results`), and why it stopped early, if it did. Jobs made
/// from data files are counted, not kept: a million-job run holds its counts and its first failures,
/// not a million results (the reports and the state store get every one as it finishes).
public struct RunSummary: Sendable {
    public enum Stop: String, Sendable {
        /// `fail_fast`: a job failed.
        case failFast = "fail_fast"
        /// `--max-time` passed.
        case maxTime = "max_time"
        /// The run was cancelled (SIGINT/SIGTERM).
        case interrupted
    }

    public var runID: String
    /// The results of the jobs written out in the jobs file, in plan order (all of them when no
    /// job comes from a data file).
    public var results: [JobResult]
    /// Every job's outcome, counted.
    public var tally: RunTally
    public var duration: Duration
    public var stop: Stop?

    /// A summary whose tally counts `results`.
    public init(runID: String, results: [JobResult], duration: Duration, stop: Stop?) {
        self.init(runID: runID, results: results, tally: RunTally(results), duration: duration, stop: stop)
    }

    public init(runID: String, results: [JobResult], tally: RunTally, duration: Duration, stop: Stop?) {
        self.runID = runID
        self.results = results
        self.tally = tally
        self.duration = duration
        self.stop = stop
    }

    /// Every job of the run.
    public var jobCount: Int { tally.jobs }
    public func count(_ outcome: JobResult.Outcome) -> Int { tally.count(outcome) }
    /// Body bytes that came over the network (responses the cache answered are `cacheBytes`).
    public var bytes: Int64 { tally.bytes }
    /// Body bytes written from the response cache (hits, 304s, stale responses).
    public var cacheBytes: Int64 { tally.cacheBytes }
    /// Jobs whose response the cache answered as `use` (`hit`, `revalidated`, `stale`, `miss`).
    public func count(cache use: RequestMetrics.CacheUse) -> Int { tally.count(cache: use) }
    /// The failed jobs' results (the first `RunTally.keptResults` of them).
    public var failures: [JobResult] { tally.failures }

    /// 0 when every job succeeded (or was up to date); 75 (try again later, as for a held lock) when
    /// a job failed because the network stayed down past `network.max_wait`; 1 otherwise.
    /// Interruption is the caller's to map.
    public var exitStatus: ExitStatus {
        if tally.unsuccessful == 0 && stop == nil { return .success }
        return tally.errors[FetchError.Code.offline.rawValue, default: 0] > 0 ? .locked : .jobsFailed
    }
}

/// Counts of a run's results as they come in: by outcome, error code and cache use, the bytes, and
/// the first failed and skipped results, for the end summary.
public struct RunTally: Sendable {
    /// Failed and skipped results kept for the summary, each.
    public static let keptResults = 1_000

    public private(set) var jobs = 0
    /// Jobs by outcome (the outcomes no job had are absent).
    public var outcomes: [JobResult.Outcome: Int] { Self.dictionary(JobResult.Outcome.allCases, outcomeCounts) }
    /// Failed jobs by error code.
    public private(set) var errors: [String: Int] = [:]
    /// Requests by what the response cache did (the uses no request had are absent).
    public var cacheUses: [RequestMetrics.CacheUse: Int] { Self.dictionary(RequestMetrics.CacheUse.allCases, cacheUseCounts) }
    public private(set) var bytes: Int64 = 0
    public private(set) var cacheBytes: Int64 = 0
    /// Jobs that did not succeed (failed or skipped).
    public private(set) var unsuccessful = 0
    public private(set) var failures: [JobResult] = []
    public private(set) var skipped: [JobResult] = []

    // Counted by case, in `allCases` order, rather than in dictionaries: `add` runs for every job,
    // and a run's first dictionary keyed by an enum makes the Swift runtime walk every conformance
    // record in the binary for the enum's `Hashable` (on the event loop, during the first jobs).
    private var outcomeCounts = [Int](repeating: 0, count: JobResult.Outcome.allCases.count)
    private var cacheUseCounts = [Int](repeating: 0, count: RequestMetrics.CacheUse.allCases.count)

    public init() {}

    /// How many jobs had `outcome`.
    public func count(_ outcome: JobResult.Outcome) -> Int { outcomeCounts[outcome.index] }

    /// How many requests had `use`.
    public func count(cache use: RequestMetrics.CacheUse) -> Int { cacheUseCounts[use.index] }

    private static func dictionary<Key: Hashable>(_ keys: [Key], _ counts: [Int]) -> [Key: Int] {
        Dictionary(uniqueKeysWithValues: zip(keys, counts).filter { $0.1 > 0 })
    }

    public init(_ results: [JobResult]) {
        for result in results { add(result) }
    }

    public mutating func add(_ result: JobResult) {
        jobs += 1
        outcomeCounts[result.outcome.index] += 1
        if let use = result.cache { cacheUseCounts[use.index] += 1 }
        if result.isFromCache { cacheBytes += result.bytes } else { bytes += result.bytes }
        if !result.isSuccess { unsuccessful += 1 }
        switch result.outcome {
        case .failed:
            errors[result.error?.code.rawValue ?? "failed", default: 0] += 1
            if failures.count < Self.keptResults { failures.append(result) }
        case .skipped:
            if skipped.count < Self.keptResults { skipped.append(result) }
        default:
            break
        }
    }
}

extension JobResult.Outcome {
    /// The outcome's place in `allCases`.
    var index: Int {
        switch self {
        case .succeeded: 0
        case .failed: 1
        case .skipped: 2
        case .upToDate: 3
        case .cached: 4
        }
    }
}

extension RequestMetrics.CacheUse {
    /// The use's place in `allCases`.
    var index: Int {
        switch self {
        case .miss: 0
        case .hit: 1
        case .revalidated: 2
        case .stale: 3
        }
    }
}
