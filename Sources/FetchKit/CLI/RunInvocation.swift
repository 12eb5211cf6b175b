import Foundation
import NIOCore
import NIOPosix

/// `fetchctl run` (and `fetchctl demo`) from parsed options to an exit status: load and check the
/// config, plan, print the plan for `--dry-run`, otherwise set up the monitors the options ask for,
/// run with SIGINT/SIGTERM trapped, and print the summary. Writes only to the writers it is given.
public struct RunInvocation: Sendable {
    public enum LogFormat: String, Sendable, CaseIterable { case text, json }
    public enum ProgressMode: String, Sendable, CaseIterable { case auto, always, never }

    public var jobsFile: String
    public var concurrency: Int?
    public var jobs: [String] = []
    public var dryRun = false
    public var logFormat: LogFormat = .text
    public var logFile: String?
    public var progress: ProgressMode = .auto
    public var stateDir: String?
    /// `--shard I/N`: only this shard's jobs, with a state directory of its own
    /// (`state_dir/shard-I-of-N` unless `stateDir` is given), so shards can run side by side.
    public var shard: Shard?
    public var failFast = false
    public var maxTime: Duration?
    /// `--no-resume`: ignore `.part` files and recorded validators.
    public var noResume = false
    /// `--reset-incremental JOB`: these incremental jobs start from their `initial` cursor.
    public var resetIncremental: [String] = []
    /// `--offline`: every job from the response cache only; no socket is opened.
    public var offline = false
    /// `--report FORMAT PATH`, in order.
    public var reports: [(format: RunReport.Format, path: String)] = []
    /// `--metrics-file PATH`: Prometheus's text format when the run ends (node_exporter's textfile collector).
    public var metricsFile: String?
    /// `--metrics-push URL`: the same, pushed to a Pushgateway, grouped by jobs file and shard.
    public var metricsPush: String?
    /// The environment `${VAR}`s come from.
    public var environment: [String: String] = ProcessEnvironment.variables()
    /// The jobs file's loading begun before the command line was parsed (`RunPrefetch`): used if
    /// it is what these options ask for, otherwise let go before the run loads its own.
    public var prefetch: RunPrefetch?

    public init(jobsFile: String) {
        self.jobsFile = jobsFile
    }

    /// Runs and returns the exit status. `stdout` gets only `--dry-run`'s plan; everything else
    /// (diagnostics, log, progress, summary) goes to `stderr` or the log file.
    public func perform(stdout: LogWriter, stderr: LogWriter) async -> ExitStatus {
        var prefetched: (config: LoadedConfig, early: StateOpening?)?
        let monitor: NetworkMonitorStart
        var transport: EarlyTransport?
        if let prefetch, matches(prefetch) {
            prefetched = await prefetch.take()
            monitor = prefetch.monitor
            transport = prefetch.transport
        } else {
            await prefetch?.discard()
            // The network monitor reads the kernel's links and routes (3–5 ms) on the thread pool and
            // another loop while this one loads the jobs file; a run that ends before it starts (a bad
            // config, --dry-run) stops it again.
            monitor = NetworkMonitorStart(dryRun || offline ? nil : NetworkMonitor.begin(on: MultiThreadedEventLoopGroup.singleton.loopOtherThanCurrent()))
        }
        let status = await perform(stdout: stdout, stderr: stderr, monitor: monitor, prefetched: prefetched, transport: transport)
        monitor.discardUnlessTaken()
        await transport?.discardUnlessTaken()
        return status
    }

    /// Whether `prefetch` loaded what this run would: the same jobs file, for a run (not a plan),
    /// with this environment, the settings' own state directory, and a network monitor unless offline.
    func matches(_ prefetch: RunPrefetch) -> Bool {
        prefetch.jobsFile == jobsFile && !dryRun && stateDir == nil && shard == nil
            && prefetch.startsMonitor == !offline && prefetch.environment == environment
    }

    private func perform(stdout: LogWriter, stderr: LogWriter, monitor: NetworkMonitorStart,
                         prefetched: (config: LoadedConfig, early: StateOpening?)?, transport: EarlyTransport?) async -> ExitStatus {
        // The state directory opens while the jobs are expanded and checked (`StateOpening`).
        let early = LockedBox<StateOpening?>(prefetched?.early)
        let config: LoadedConfig
        if let prefetched {
            config = prefetched.config
        } else {
            var loader = ConfigLoader(environment: environment, mode: dryRun ? .plan : .run)
            if !dryRun {
                loader.onJobsFileSettings = { [self] settings in
                    let state = stateDirectory(settings)
                    early.withLock { $0 = StateOpening.early(stateDirectory: state, cacheDirectory: Self.cacheDirectory(settings, stateDirectory: state)) }
                }
            }
            config = loader.load([jobsFile])
        }
        if !config.diagnostics.isEmpty {
            stderr.write(DiagnosticRenderer(sources: config.sources).render(config.diagnostics, format: .text))
        }
        if config.hasErrors {
            stderr.flush()
            return .invalidConfig
        }
        guard config.jobsFile != nil else {
            stderr.write("error: \(jobsFile) has no jobs: (it is a route file; run a jobs file that includes it)\n")
            stderr.flush()
            return .invalidConfig
        }
        var plan: RunPlan
        do {
            plan = try RunPlan(config: config, selecting: jobs)
        } catch {
            stderr.write("error: \(error.message)\n")
            stderr.flush()
            return .usage
        }
        let planned = plan.jobs.count
        if let shard { plan.apply(shard) }
        let incrementalIDs = Set(config.jobs.filter { $0.spec.incremental != nil }.flatMap { [$0.id, $0.spec.id] }
            + config.dataFileJobs.filter { $0.spec.incremental != nil }.map(\.id))
        for name in resetIncremental where !incrementalIDs.contains(name) {
            let hint = EditDistance.hint(for: name, among: incrementalIDs.sorted()).map { " (\($0))" }
                ?? (incrementalIDs.isEmpty ? " (no job of the jobs file has incremental:)" : "")
            stderr.write("error: --reset-incremental: no incremental job '\(name)'\(hint)\n")
            stderr.flush()
            return .usage
        }
        if dryRun {
            let stateDirectory = stateDirectory(settings(config))
            let cache = try? SQLiteResponseCache(directory: Self.cacheDirectory(settings(config), stateDirectory: stateDirectory), readOnly: true)
            let renderer = DryRunRenderer(redactor: config.redactor, cache: cache, offline: offline,
                                          httpVersion: settings(config).httpVersion,
                                          proxies: (try? Self.proxies(settings(config), environment: environment)) ?? .direct)
            if let shard {
                stdout.write("# shard \(shard): \(plan.jobs.count) of the plan's \(planned) written-out jobs"
                             + (plan.dataFileJobs.isEmpty ? "" : ", and its share of the data files' jobs") + "\n")
            }
            stdout.write(await renderer.render(plan))
            stdout.flush()
            stderr.flush()  // the diagnostics (an unset variable's warning) written above
            return .success
        }
        return await execute(config: config, plan: plan, stderr: stderr, monitor: monitor, early: early.withLock { $0 }, earlyTransport: transport)
    }

    private func execute(config: LoadedConfig, plan: RunPlan, stderr: LogWriter, monitor: NetworkMonitorStart,
                         early: StateOpening?, earlyTransport: EarlyTransport?) async -> ExitStatus {
        let logWriter: LogWriter
        if let logFile {
            do {
                logWriter = try LogWriter(path: logFile)
            } catch {
                stderr.write("error: \(error)\n")
                stderr.flush()
                return .usage
            }
        } else {
            logWriter = stderr
        }
        let logOnStderr = logFile == nil
        let showProgress = progress == .always || (progress == .auto && stderr.isTerminal && !(logOnStderr && logFormat == .json))
        let display = showProgress ? ProgressDisplay(writer: stderr) : nil
        var monitors: [any EventMonitor] = []
        switch logFormat {
        case .json:
            monitors.append(JSONLinesMonitor(writer: logWriter, redactor: config.redactor))
        case .text:
            let output: @Sendable (String) -> Void
            if let display, logOnStderr { output = { display.printAbove($0) } } else { output = { logWriter.write($0) } }
            monitors.append(TextLogMonitor(redactor: config.redactor, quiet: display != nil && logOnStderr, output: output))
        }
        if let display { monitors.append(display) }
        // Reports gather each job as it finishes; a report that can't be started stops the run before it sends anything.
        let spool: RunReportSpool?
        do {
            spool = reports.isEmpty ? nil : try RunReportSpool(reports: reports, jobsFile: jobsFile, redactor: config.redactor,
                                                                     keptJobs: Set(plan.jobs.map(\.id)))
        } catch {
            stderr.write("error: \(error)\n")
            stderr.flush()
            return .usage
        }
        if let spool { monitors.append(spool) }
        let metrics = metricsFile == nil && metricsPush == nil ? nil
            : RunMetrics(jobsFile: (jobsFile as NSString).lastPathComponent, shard: shard.map { "\($0)" })
        if let metrics { monitors.append(metrics) }
        if config.jobsFile?.settings.behaviour.tls.insecure == true || plan.jobs.contains(where: { $0.behaviour.tls.insecure == true })
            || plan.dataFileJobs.contains(where: { $0.common.behaviour.tls.insecure == true }) {
            stderr.write("warning: tls.insecure is set: certificates are not verified for some requests\n")
        }
        // FETCHCTL_HTTP_CLIENT=asynchttpclient sends every request through AsyncHTTPClient.
        let httpClient: Session.HTTPClientKind
        switch environment["FETCHCTL_HTTP_CLIENT"] {
        case nil, "": httpClient = .fetchKit
        case let name?:
            guard let chosen = Session.HTTPClientKind(rawValue: name.lowercased()) else {
                stderr.write("error: FETCHCTL_HTTP_CLIENT is '\(name)'; it can be \(Session.HTTPClientKind.allCases.map(\.rawValue).joined(separator: " or "))\n")
                stderr.flush()
                return .invalidConfig
            }
            httpClient = chosen
        }
        // Proxies, as curl reads them from the environment, unless settings.proxy says otherwise.
        let proxies: ProxyResolver
        do {
            proxies = try Self.proxies(settings(config), environment: environment)
        } catch {
            stderr.write("error: \((error as? FetchError)?.message ?? "\(error)")\n")
            stderr.flush()
            return .invalidConfig
        }

        // The state directory: one run at a time (exit 75), and the store for resuming and history.
        let stateDirectory = stateDirectory(settings(config))
        let cacheDirectory = Self.cacheDirectory(settings(config), stateDirectory: stateDirectory)
        // The early opening if it is of these directories and got the lock (a run holding it then
        // may have finished since: the lock is tried again).
        let opening = early.flatMap { $0.stateDirectory == stateDirectory && $0.cacheDirectory == cacheDirectory && $0.isLocked ? $0 : nil }
            ?? StateOpening(stateDirectory: stateDirectory, cacheDirectory: cacheDirectory)
        opening.redactor.withLock { $0 = config.redactor }
        let lock: RunLock
        switch opening.lock {
        case .success(let taken):
            lock = taken
        case .failure(let held as RunLock.Held):
            stderr.write("error: \(held)\n")
            stderr.flush()
            return .locked
        case .failure(let error):
            stderr.write("error: \(error)\n")
            stderr.flush()
            return .invalidConfig
        }
        let problems = opening.problems
        // The run's transport: made while the jobs file loaded (`EarlyTransport`), or here so that
        // the first job's connection opens (on the other loop) while the state directory finishes
        // opening; shut down at the end of the run.
        let transport = (httpClient == .fetchKit ? earlyTransport?.take() : nil)
            ?? Runner.makeTransport(config: config, proxies: proxies, client: httpClient)
        if !offline, let first = plan.jobs.first, let request = try? first.router.makeRequest() {
            transport.preconnect(for: request, options: TransportOptions(tls: first.behaviour.tls))
        }
        var store: StateStore?
        do {
            store = try await opening.store?.get()
        } catch {
            // The store holds history and validators, never data: run without it rather than not at all.
            stderr.write("warning: \(error); running without resume or history\n")
        }
        if let store { monitors.append(StateRecorder(store: store, jobsFile: jobsFile)) }
        for name in resetIncremental {
            do {
                let removed = try store?.resetIncrementalCursors(job: name) ?? 0
                stderr.write("note: --reset-incremental \(name): \(removed == 0 ? "no cursor was recorded" : "the recorded cursor is forgotten"); it starts from its initial value\n")
            } catch {
                stderr.write("error: --reset-incremental \(name): \(error)\n")
                stderr.flush()
                try? await transport.shutdown()
                return .invalidConfig
            }
        }

        // The response cache: without it (not writable, say) the run goes on, sending every request.
        // Problems found while opening it are logged once the run (and its run_id) has started.
        problems.forward(to: CompositeEventMonitor(monitors))
        monitors.append(problems)
        var cache: SQLiteResponseCache?
        do {
            cache = try await opening.cache?.get()
        } catch {
            problems.report(CacheProblem(path: cacheDirectory, message: "running without the response cache: \(error)"))
        }
        var options = Runner.Options(concurrency: concurrency, failFast: failFast, maxTime: maxTime, stateStore: store, resumes: !noResume,
                                     responseCache: cache, offline: offline)
        options.proxies = proxies
        options.keepsResults = !reports.isEmpty
        options.httpClient = httpClient
        // Outages are waited out with the network monitor; without netlink, retries alone meet them.
        // Taken here: a run that returns before this point leaves it to `perform`, which stops it.
        if let monitorStarting = monitor.take() {
            do {
                options.networkMonitor = try await monitorStarting.get()
            } catch {
                options.networkProblem = "no network monitor, outages are retried as usual: \((error as? FetchError)?.message ?? "\(error)")"
            }
        }
        let runner = Runner(config: config, plan: plan, options: options, monitors: monitors, transport: transport)
        let task = Task { await runner.run() }
        let trap = SignalTrap { _ in task.cancel() }
        let summary = await task.value
        let status = trap.exitStatus ?? summary.exitStatus
        // The state store and the response cache finish side by side, each on a thread of its own,
        // while the network monitor stops: all of it happens after the last response.
        let storeFinishing = store.map { store in
            Self.onAnotherThread { () -> String? in
                do {
                    try store.flush()
                    try store.finishRun(summary, exitCode: status.rawValue)
                    // The checkpoint closing the store would make, made while the cache finishes.
                    _ = try? store.checkpoint()
                    return nil
                } catch {
                    return "warning: \(error)\n"
                }
            }
        }
        async let monitorStopped: Void = { await options.networkMonitor?.stop() }()
        async let connectionsClosed: Void = { try? await transport.shutdown() }()
        await cache?.finishRun(id: summary.runID, maxSize: settings(config).cacheMaxSize)
        if let warning = (try? await storeFinishing?.get()) ?? nil { stderr.write(warning) }
        await monitorStopped
        await connectionsClosed
        for failure in spool?.write(summary, exitCode: status.rawValue) ?? [] { stderr.write("error: \(failure)\n") }
        if let metrics {
            let ended = Date()
            let lastSuccess = status == .success ? ended : (try? store?.lastSuccess()) ?? nil
            metrics.finish(summary, exitCode: status.rawValue, endedAt: ended, lastSuccess: lastSuccess)
            await export(metrics.text, stderr: stderr)
        }
        withExtendedLifetime(lock) {}
        logWriter.flush()
        // The summary is for people: not when the JSON log itself is on stderr.
        if !(logOnStderr && logFormat == .json) {
            stderr.write(RunSummaryRenderer(redactor: config.redactor).render(summary))
        }
        stderr.flush()
        if logFile != nil { logWriter.close() }
        // The process exits next: the stores close here, and what is left of them waits for the exit.
        store?.closeForExit()
        cache?.closeForExit()
        return status
    }

    /// Writes and pushes the run's metrics; a failure is an error line, not a failed run (the
    /// batch's results are on disk either way).
    private func export(_ text: String, stderr: LogWriter) async {
        if let metricsFile {
            do { try MetricsExport.write(text, to: metricsFile) } catch { stderr.write("error: \(error)\n") }
        }
        if let metricsPush {
            do {
                try await MetricsExport.push(text, to: metricsPush, jobsFile: (jobsFile as NSString).lastPathComponent, shard: shard.map { "\($0)" })
            } catch {
                stderr.write("error: \(error)\n")
            }
        }
    }

    private func settings(_ config: LoadedConfig) -> Settings {
        Runner.settings(of: config)
    }

    /// The proxies for a run: `settings.proxy` where set, else the environment's (`https_proxy`, …).
    static func proxies(_ settings: Settings, environment: [String: String]) throws -> ProxyResolver {
        try ProxyResolver(environment: environment, url: settings.proxyURL, noProxy: settings.noProxy?.joined(separator: ","))
    }

    /// `--state-dir`, else `settings.state_dir`, with `shard-I-of-N` under it for a shard.
    private func stateDirectory(_ settings: Settings) -> String {
        if let stateDir { return FilePaths.standardized(stateDir) }
        let base = settings.stateDir
        guard let shard, shard.count > 1 else { return base }
        return (base as NSString).appendingPathComponent("shard-\(shard.index)-of-\(shard.count)")
    }

    /// `settings.cache.dir`, else `cache/` in the state directory.
    static func cacheDirectory(_ settings: Settings, stateDirectory: String) -> String {
        settings.cacheDir ?? (stateDirectory as NSString).appendingPathComponent("cache")
    }
}

/// The network monitor `perform` started before loading the jobs file: taken by the run, or
/// stopped once started if the run never got that far.
final class NetworkMonitorStart: Sendable {
    private let starting: LockedBox<EventLoopFuture<NetworkMonitor>?>

    init(_ starting: EventLoopFuture<NetworkMonitor>?) {
        self.starting = LockedBox(starting)
    }

    func take() -> EventLoopFuture<NetworkMonitor>? {
        starting.withLock { value in
            defer { value = nil }
            return value
        }
    }

    func discardUnlessTaken() {
        if let left = take() { NetworkMonitor.discard(left) }
    }
}

/// Passes the response cache's problems to the monitors, holding those found before the run
/// started (opening the store) until `run.started`, so every log line has its `run_id`.
final class CacheProblemRelay: EventMonitor {
    /// The monitors to tell (set once the run's are known; the cache may report before), whether
    /// the run has started, and what was reported before it did.
    private let state = LockedBox<(targets: CompositeEventMonitor?, started: Bool, pending: [CacheProblem])>((nil, false, []))

    func forward(to targets: CompositeEventMonitor) {
        state.withLock { $0.targets = targets }
    }

    func report(_ problem: CacheProblem) {
        let now = state.withLock { s -> CompositeEventMonitor? in
            if !s.started { s.pending.append(problem) }
            return s.started ? s.targets : nil
        }
        now?.responseCacheDidReport(problem)
    }

    func runDidStart(_ run: RunInfo) {
        let (targets, pending) = state.withLock { s -> (CompositeEventMonitor?, [CacheProblem]) in
            s.started = true
            defer { s.pending = [] }
            return (s.targets, s.pending)
        }
        for problem in pending { targets?.responseCacheDidReport(problem) }
    }
}

extension RunInvocation {
    /// Runs `body` at once on one of the start's threads (`startThreads`); its result when the
    /// future is awaited. Not on Dispatch's pool: given the state store's and the response
    /// cache's openings one after the other, it sometimes ran the second only once the first was
    /// done (2.5 ms later).
    ///
    /// The work is handed over before the future's event loop is asked for: the first call of a
    /// process (`RunPrefetch`'s load of the jobs file) would otherwise wait for the event loops'
    /// creation, 3–6 ms of the main thread at start-up.
    static func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) -> EventLoopFuture<T> {
        let handoff = ResultHandoff<T>()
        startThreads.submit { _ in handoff.deliver(Result { try body() }) }
        let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: T.self)
        handoff.deliver(to: promise)
        return promise.futureResult
    }

    /// Three threads for what a run does at once before its first request and after its last
    /// (the jobs file's load, the state store's and the response cache's openings; the stores'
    /// finish), made on first use and kept for the process. A thread of its own for each call
    /// made four threads a run, each exiting before the run did: each exit gave its stack's pages back
    /// (`madvise(MADV_DONTNEED)`), which once the event loops run on the other core interrupted
    /// it to flush its TLB, and each new thread's first `malloc` made an arena (an `mmap` and a
    /// `munmap`, another flush).
    private static let startThreads: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 3)
        pool.start()
        return pool
    }()
}

/// A result that may be ready before the promise it completes exists, or after: whichever of the
/// two arrives second completes the promise.
final class ResultHandoff<T: Sendable>: Sendable {
    private enum State {
        case empty
        case result(Result<T, any Error>)
        case promise(EventLoopPromise<T>)
        case done
    }

    private let state = LockedBox(State.empty)

    func deliver(_ result: Result<T, any Error>) {
        let promise = state.withLock { state -> EventLoopPromise<T>? in
            guard case .promise(let promise) = state else {
                state = .result(result)
                return nil
            }
            state = .done
            return promise
        }
        promise?.completeWith(result)
    }

    func deliver(to promise: EventLoopPromise<T>) {
        let result = state.withLock { state -> Result<T, any Error>? in
            guard case .result(let result) = state else {
                state = .promise(promise)
                return nil
            }
            state = .done
            return result
        }
        if let result { promise.completeWith(result) }
    }
}
