import Foundation
import FetchKitTesting
@testable import FetchKit

/// A jobs file in a temporary directory, run again and again against one local server with the
/// real SQLite response cache in its state directory, as cron would run `fetchctl run`.
final class CacheFixture: Sendable {
    let server: TestServer
    let files: ConfigFixture

    init(server: TestServer, jobs: String) throws {
        self.server = server
        files = try ConfigFixture(["jobs.yaml": "version: 1\n" + jobs])
    }

    var cacheDirectory: String { files.path(".fetchctl/cache") }

    /// One run: the loader, the runner, the cache (closed again at the end), and what it logged.
    func run(offline: Bool = false, environment: [String: String] = [:], cacheDirectory: String? = nil) async throws -> CacheRun {
        let config = files.load("jobs.yaml", environment: environment.merging(["BASE": server.baseURL]) { a, _ in a }, mode: .run)
        guard !config.hasErrors else { throw FixtureError(text: "\(config.diagnostics)") }
        let plan = try RunPlan(config: config, selecting: [])
        let recorder = CacheEventRecorder()
        // Stores batched, as `fetchctl run` opens it.
        let cache = try? SQLiteResponseCache(directory: cacheDirectory ?? self.cacheDirectory, batchesStores: true, redact: { [redactor = config.redactor] in redactor.redact($0) },
                                             onProblem: { recorder.responseCacheDidReport($0) })
        if cache == nil { recorder.responseCacheDidReport(CacheProblem(path: cacheDirectory ?? self.cacheDirectory, message: "no cache")) }
        let store = try StateStore(directory: files.path(".fetchctl"))
        let options = Runner.Options(stateStore: store, responseCache: cache, offline: offline)
        let summary = await Runner(config: config, plan: plan, options: options, monitors: [recorder]).run()
        await cache?.finishRun(id: summary.runID, maxSize: config.jobsFile?.settings.cacheMaxSize)
        return CacheRun(summary: summary, events: recorder)
    }

    func output(_ name: String) -> String? {
        (try? Data(contentsOf: URL(fileURLWithPath: files.path("out/" + name)))).map { String(decoding: $0, as: UTF8.self) }
    }

    func requests(_ key: String) -> [RecordedRequest] { server.state.requests(pathPrefix: "/cache/\(key)") }
}

struct FixtureError: Error, CustomStringConvertible {
    var text: String
    var description: String { text }
}

/// A run's summary and events.
struct CacheRun {
    var summary: RunSummary
    var events: CacheEventRecorder

    func outcome(_ job: String) -> JobResult.Outcome? { summary.results.first { $0.job == job }?.outcome }
    func result(_ job: String) -> JobResult? { summary.results.first { $0.job == job } }
    /// The `cache` field of each `request.finished` of `job`, in order.
    func cacheUses(_ job: String) -> [RequestMetrics.CacheUse] { events.metrics.filter { $0.job == job }.map(\.metrics.cache) }
}

/// Records `request.finished` metrics, sent requests and cache warnings.
final class CacheEventRecorder: EventMonitor {
    private let box = LockedBox<(metrics: [(job: String?, metrics: RequestMetrics)], started: [String?], problems: [CacheProblem])>(([], [], []))

    var metrics: [(job: String?, metrics: RequestMetrics)] { box.withLock { $0.metrics } }
    var started: [String?] { box.withLock { $0.started } }
    var problems: [CacheProblem] { box.withLock { $0.problems } }

    func requestDidResume(_ request: RequestInfo) { box.withLock { $0.started.append(request.job) } }
    func request(_ request: RequestInfo, didGatherMetrics metrics: RequestMetrics) {
        box.withLock { $0.metrics.append((request.job, metrics)) }
    }
    func responseCacheDidReport(_ problem: CacheProblem) { box.withLock { $0.problems.append(problem) } }
}
