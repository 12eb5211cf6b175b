import Foundation

/// Runs a plan's jobs: `concurrency` workers take jobs in plan order (a job whose host already has
/// `per_host` jobs running waits aside for one whose host has room: `JobQueue`), each job started once
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
        /// The response cache for `save` jobs and jobs without output; nil caches nothing.
        public var responseCache: (any ResponseCache)?
        /// `--offline`: every job from the cache only; nothing is sent.
        public var offline: Bool
        /// Tells when the network comes back (`NetworkMonitor`); nil meets outages with retries alone.
        public var networkMonitor: NetworkMonitor?
        /// Why there is no network monitor, logged as `network.warning` once the run has started.
        public var networkProblem: String?
        /// Which requests go through a proxy (`fetchctl run`: the environment and `settings.proxy`).
        public var proxies: ProxyResolver = .direct
        /// The HTTP client behind the run's transport (`FETCHCTL_HTTP_CLIENT`).
        public var httpClient: Session.HTTPClientKind = .fetchKit
        /// False leaves `RunSummary.results` empty (the tally counts every job either way):
        /// `fetchctl run` without `--report` reads only the tally. A run then keeps written-out
        /// jobs' results only for `needs` and a fan-out's sources: a 20,000-job matrix without them
        /// had hashed every result into a dictionary and put them in plan order after its last
        /// response, for nothing.
        public var keepsResults = true

        public init(concurrency: Int? = nil, failFast: Bool = false, maxTime: Duration? = nil, runID: String? = nil,
                    stateStore: StateStore? = nil, resumes: Bool = true, responseCache: (any ResponseCache)? = nil, offline: Bool = false) {
            self.concurrency = concurrency
            self.failFast = failFast
            self.maxTime = maxTime
            self.runID = runID
            self.stateStore = stateStore
            self.resumes = resumes
            self.responseCache = responseCache
            self.offline = offline
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

    var settings: Settings { Self.settings(of: config) }

    /// The jobs file's settings; the defaults for a config without a jobs file.
    static func settings(of config: LoadedConfig) -> Settings {
        config.jobsFile?.settings ?? Settings(outputDir: ".", stateDir: ".fetchctl")
    }
    public var concurrency: Int { max(1, options.concurrency ?? settings.concurrency) }

    /// Whether a job can find its host busy (`per_host` below `concurrency`). Then the queue
    /// spreads the jobs over their hosts (`JobQueue.HostSpread`): a worker takes the next job whose
    /// host has a free slot, passing over the jobs of full hosts, so no worker waits for a busy host
    /// while another host's connections sit idle. Before, twice as many workers took jobs in plan
    /// order and half of them waited for their host's slot, each freed slot waking one of them: a
    /// task's wake-up per request (8 hosts, per_host 2: 18,000 instructions a job more than no limit).
    var waitsForHosts: Bool { settings.perHost < concurrency }

    /// Runs every job of the plan and returns their results. Cancelling the calling task interrupts
    /// the run: nothing new starts, running jobs are cancelled, and the summary says `interrupted`.
    public func run() async -> RunSummary {
        let runID = options.runID ?? Self.makeRunID()
        let started = ContinuousClock.now
        let waiter = options.networkMonitor.map { NetworkWaiter(monitor: $0, maxWait: settings.networkMaxWait, events: monitor) }
        let configuration = Self.sessionConfiguration(settings, redactor: config.redactor, proxies: options.proxies, client: options.httpClient)
        let session = Session(configuration: configuration, transport: transport, eventMonitors: [monitor], cache: options.responseCache,
                              networkWaiter: waiter)
        let jobs = JobContext(runner: self, session: session, runID: runID)
        monitor.runDidStart(RunInfo(id: runID, jobs: plan.dataFileJobs.isEmpty ? plan.jobs.count : plan.jobCountEstimate, concurrency: concurrency))
        if let problem = options.networkProblem { monitor.networkMonitorDidFail(problem) }
        waiter?.start()
        let (results, tally, stop) = await schedule(jobs)
        // A fan-out's records are read: its spool goes, unless a source's crawl is to continue.
        for spool in jobs.spools where spool.sources.allSatisfy({ results[$0]?.isSuccess == true }) { spool.remove() }
        waiter?.stop()
        // Connections close while the summary is put together.
        async let shutdown: Void = { try? await session.shutdown() }()
        let ordered = options.keepsResults ? plan.jobs.compactMap { results[$0.id] } : []
        let summary = RunSummary(runID: runID, results: ordered, tally: tally, duration: .now - started, stop: stop)
        await shutdown
        monitor.runDidFinish(summary)
        return summary
    }

    private enum Event: Sendable {
        /// A worker found nothing more to start.
        case workerDone
        /// A job failed under fail_fast: cancel the running ones.
        case failFast
        case deadline
        case timerCancelled
    }

    /// `concurrency` workers, each taking the next ready job from a `JobQueue` and running it, so a
    /// job costs no task of its own and no trip through this task. fail_fast and `--max-time`
    /// cancel the workers, which cancels their running jobs; jobs not started are skipped.
    private func schedule(_ jobs: JobContext) async -> ([String: JobResult], RunTally, RunSummary.Stop?) {
        let monitor = self.monitor
        let feed = plan.dataFileJobs.isEmpty ? nil : DataFileFeed(plan.dataFileJobs, shard: plan.shard)
        // Results are looked up by `needs` and a fan-out's sources, and listed for `keepsResults`.
        let keepsResults = options.keepsResults || plan.jobs.contains { !$0.needs.isEmpty }
            || plan.dataFileJobs.contains { !$0.needs.isEmpty || !$0.waitsFor.isEmpty }
        // Jobs set aside for full hosts: enough for many hosts' jobs in turn, bounded so that a batch
        // sorted by host (or a data file's read ahead) doesn't pile up.
        let spread = waitsForHosts ? JobQueue.HostSpread(perHost: settings.perHost, window: max(64, 8 * concurrency)) : nil
        // A few jobs before the end the stores commit what they gathered (for 2,000 jobs, 64),
        // and again once nothing is left to start: a commit of a whole batch's rows takes 2–3 ms,
        // and made only when the last job had started, it was still running after the last response.
        let stores = (cache: options.responseCache, state: options.stateStore)
        let nearEnd = (count: max(4 * concurrency, plan.jobs.count / 32), action: { @Sendable in
            stores.cache?.commitSoon()
            stores.state?.commitSoon()
        })
        let queue = JobQueue(jobs: plan.jobs, feed: feed, failFast: options.failFast || settings.failFast, keepsResults: keepsResults,
                             spread: spread, nearEnd: plan.jobs.count > nearEnd.count ? nearEnd : nil) {
            monitor.jobDidFinish($0)
        }
        let workers = feed == nil ? min(concurrency, plan.jobs.count) : concurrency
        await withTaskGroup(of: Event.self) { group in
            if let maxTime = options.maxTime {
                group.addTask {
                    // Cancelled (the run was interrupted, or every worker is done): not a deadline.
                    do { try await Task.sleep(for: maxTime) } catch { return .timerCancelled }
                    return .deadline
                }
            }
            for _ in 0..<workers {
                group.addTask {
                    var home: EventLoopIsolation?
                    if #available(macOS 14, *) { home = EventLoopExecutor.nextLoop() }
                    return await Self.work(queue, jobs, on: home)
                }
            }
            var working = workers
            var drained = false
            while working > 0, let event = await group.next() {
                switch event {
                case .workerDone:
                    working -= 1
                    // Nothing is left to start: the responses stored so far are committed while the
                    // last jobs run, not all after the last of them.
                    if !drained {
                        drained = true
                        stores.cache?.commitSoon()
                        stores.state?.commitSoon()
                    }
                case .failFast:
                    working -= 1
                    group.cancelAll()
                case .deadline:
                    if queue.stop(.maxTime) { group.cancelAll() }
                case .timerCancelled:
                    break
                }
            }
            group.cancelAll()  // the --max-time timer, once every worker is done
        }
        let (results, tally, notStarted, stop) = queue.finalResults(cancelled: Task.isCancelled) { monitor.jobDidFinish($0) }
        for result in notStarted { monitor.jobDidFinish(result) }
        return (results, tally, stop)
    }

    /// A worker: runs the queue's next ready job until there is none. Isolated to an event loop when
    /// the loops are the global executor (`EventLoopIsolation`), and so is all the work of its jobs.
    private static func work(_ queue: JobQueue, _ jobs: JobContext, on home: isolated EventLoopIsolation?) async -> Event {
        var previous: JobHost.Key?
        while let (job, host) = await queue.next(after: previous) {
            if queue.finish(await jobs.execute(job), of: job, host: host) { return .failFast }
            previous = host
        }
        return .workerDone
    }

    /// The session a run with `settings` sends its requests through.
    static func sessionConfiguration(_ settings: Settings, redactor: Redactor, proxies: ProxyResolver,
                                     client: Session.HTTPClientKind) -> Session.Configuration {
        var configuration = Session.Configuration(
            perHost: settings.perHost, rateLimits: settings.rateLimits,
            connectTimeout: settings.behaviour.timeout.connect ?? TransportTimeouts.defaults.connect,
            redactor: redactor, httpVersion: settings.httpVersion, proxies: proxies)
        configuration.client = client
        return configuration
    }

    /// The transport a run's session would make for itself, made ahead of the run by a caller that
    /// passes it to `init(transport:)` (and shuts it down after): `fetchctl run` opens the first
    /// job's connection with it while its state directory is still opening.
    public static func makeTransport(config: LoadedConfig, proxies: ProxyResolver, client: Session.HTTPClientKind) -> any HTTPTransport {
        makeTransport(settings: settings(of: config), proxies: proxies, client: client)
    }

    /// The same from the jobs file's settings alone (all a transport reads: per-host limit,
    /// connect timeout, HTTP version, proxies), before the rest of the config is loaded.
    static func makeTransport(settings: Settings, proxies: ProxyResolver, client: Session.HTTPClientKind) -> any HTTPTransport {
        Session.makeTransport(sessionConfiguration(settings, redactor: Redactor(), proxies: proxies, client: client))
    }

    /// A run id: UTC time and a random suffix, e.g. `20261121T120000Z-3f9a1c`.
    static func makeRunID() -> String {
        var seconds = time_t(Date().timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Digits by hand: Foundation's `String(format:)` made the runtime scan its conformance
        // records for the arguments' types, a third of a millisecond before the first request.
        func padded(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let stamp = padded(parts.tm_year + 1900, 4) + padded(parts.tm_mon + 1, 2) + padded(parts.tm_mday, 2) + "T"
            + padded(parts.tm_hour, 2) + padded(parts.tm_min, 2) + padded(parts.tm_sec, 2) + "Z"
        return stamp + "-" + String(Hex.string(UInt64(UInt32.random(in: 0..<0x1000000))).suffix(6))
    }
}
