import Foundation

/// Runs a plan's jobs: a sliding window of `concurrency` jobs in a task group, each job started once
/// every job it `needs` has succeeded (skipped when one did not), with `fail_fast` and `--max-time`
/// stopping the run early (jobs not started are skipped, those running are cancelled). Requests go
/// through one `Session` for the whole run, which applies `per_host` and `rate_limits`.
public final class Runner: Sendable {
    public struct Options: Sendable {
        /// Overrides `settings.concurrency`.
        public var concurrency: Int?
        /// Overrides `settings.fail_fast` when true.
        public var failFast: Bool
        /// Stop starting jobs and cancel running ones after this long.
        public var maxTime: Duration?
        /// The run's id in events; random when nil.
        public var runID: String?
        /// Where download validators live; nil downloads without resuming across runs.
        public var stateStore: StateStore?
        /// False for `--no-resume`: ignore `.part` files and recorded validators.
        public var resumes: Bool

        public init(concurrency: Int? = nil, failFast: Bool = false, maxTime: Duration? = nil, runID: String? = nil,
                    stateStore: StateStore? = nil, resumes: Bool = true) {
            self.concurrency = concurrency
            self.failFast = failFast
            self.maxTime = maxTime
            self.runID = runID
            self.stateStore = stateStore
            self.resumes = resumes
        }
    }

    public let config: LoadedConfig
    public let plan: RunPlan
    public let options: Options
    public let monitor: CompositeEventMonitor
    private let transport: (any HTTPTransport)?

    /// - Parameter transport: nil uses a new AsyncHTTPClient transport for the run, shut down at its end.
    public init(config: LoadedConfig, plan: RunPlan, options: Options = Options(), monitors: [any EventMonitor] = [],
                transport: (any HTTPTransport)? = nil) {
        self.config = config
        self.plan = plan
        self.options = options
        monitor = CompositeEventMonitor(monitors)
        self.transport = transport
    }

    var settings: Settings { config.jobsFile?.settings ?? Settings(outputDir: ".", stateDir: ".fetchctl") }
    public var concurrency: Int { max(1, options.concurrency ?? settings.concurrency) }

    /// Runs every job of the plan and returns their results. Cancelling the calling task interrupts
    /// the run: nothing new starts, running jobs are cancelled, and the summary says `interrupted`.
    public func run() async -> RunSummary {
        let runID = options.runID ?? Self.makeRunID()
        let started = ContinuousClock.now
        let session = Session(configuration: Session.Configuration(
            perHost: settings.perHost, rateLimits: settings.rateLimits,
            connectTimeout: settings.behaviour.timeout.connect ?? TransportTimeouts.defaults.connect,
            redactor: config.redactor), transport: transport, eventMonitors: [monitor])
        let jobs = JobContext(runner: self, session: session)
        monitor.runDidStart(RunInfo(id: runID, jobs: plan.jobs.count, concurrency: concurrency))
        let (results, stop) = await schedule(jobs)
        try? await session.shutdown()
        let ordered = plan.jobs.compactMap { results[$0.id] }
        let summary = RunSummary(runID: runID, results: ordered, duration: .now - started, stop: stop)
        monitor.runDidFinish(summary)
        return summary
    }

    private enum Event: Sendable {
        case finished(JobResult)
        case deadline
    }

    /// The sliding window: starts ready jobs up to `concurrency`, records results as they come.
    private func schedule(_ jobs: JobContext) async -> ([String: JobResult], RunSummary.Stop?) {
        var results: [String: JobResult] = [:]
        let jobsInPlan = plan.jobs
        // Indices into the plan, in order. A started or skipped job's slot becomes `taken` and `head`
        // moves past taken slots, so starting jobs in order costs O(1) each, not a shift of the array.
        let taken = -1
        var pending = Array(jobsInPlan.indices)
        var head = 0
        var pendingCount = pending.count
        var running = 0
        var stop: RunSummary.Stop?
        let failFast = options.failFast || settings.failFast
        let limit = concurrency
        let monitor = self.monitor

        func record(_ result: JobResult) {
            results[result.job] = result
            if result.outcome == .skipped { monitor.jobDidFinish(result) }
        }

        await withTaskGroup(of: Event.self) { group in
            if let maxTime = options.maxTime {
                group.addTask {
                    do { try await Task.sleep(for: maxTime) } catch { return .deadline }
                    return .deadline
                }
            }
            func startReady() {
                var index = head
                while stop == nil, !Task.isCancelled, running < limit, index < pending.count {
                    guard pending[index] != taken else {
                        index += 1
                        continue
                    }
                    let job = jobsInPlan[pending[index]]
                    let needs = job.needs.map { results[$0] }
                    if needs.contains(where: { $0 == nil }) {
                        index += 1
                        continue
                    }
                    pending[index] = taken
                    pendingCount -= 1
                    while head < pending.count, pending[head] == taken { head += 1 }
                    if let blocker = needs.compactMap({ $0 }).first(where: { !$0.isSuccess }) {
                        record(JobResult(job: job.id, outcome: .skipped, reason: "needs \(blocker.job), which \(blocker.outcome == .skipped ? "was skipped" : "failed")"))
                        index = head  // a skip may settle other jobs' needs
                        continue
                    }
                    running += 1
                    group.addTask { .finished(await jobs.execute(job)) }
                }
            }
            startReady()
            while running > 0 || (stop == nil && pendingCount > 0 && !Task.isCancelled) {
                guard let event = await group.next() else { break }
                switch event {
                case .finished(let result):
                    running -= 1
                    record(result)
                    if result.outcome == .failed, failFast, stop == nil {
                        stop = .failFast
                        group.cancelAll()
                    }
                case .deadline:
                    if stop == nil, running > 0 || pendingCount > 0 {
                        stop = .maxTime
                        group.cancelAll()
                    }
                }
                if Task.isCancelled, stop == nil { stop = .interrupted }
                startReady()
            }
            if Task.isCancelled, stop == nil, pendingCount > 0 { stop = .interrupted }
            group.cancelAll()
        }
        let reason: String
        switch stop {
        case .failFast?: reason = "not started: fail_fast stopped the run"
        case .maxTime?: reason = "not started: the run reached --max-time"
        case .interrupted?: reason = "not started: the run was interrupted"
        case nil: reason = "not started"
        }
        for index in pending where index != taken { record(JobResult(job: jobsInPlan[index].id, outcome: .skipped, reason: reason)) }
        return (results, stop)
    }

    /// A run id: UTC time and a random suffix, e.g. `20261121T120000Z-3f9a1c`.
    static func makeRunID() -> String {
        var seconds = time_t(Date().timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let stamp = String(format: "%04d%02d%02dT%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                           parts.tm_hour, parts.tm_min, parts.tm_sec)
        return stamp + "-" + String(format: "%06x", UInt32.random(in: 0..<0x1000000))
    }
}
