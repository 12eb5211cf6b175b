import Foundation

/// Runs single jobs of a run: builds each job's request options from its layered behaviour, picks
/// where the body goes, and turns the session's answer into a `JobResult`. OAuth2 credentials are
/// shared by every job with the same `auth.oauth2` block.
final class JobContext: Sendable {
    let session: Session
    let monitor: CompositeEventMonitor
    let redactor: Redactor
    let secretHeaders: Set<String>
    let store: StateStore?
    let resumes: Bool
    let offline: Bool
    let outputGuard: OutputGuard
    /// `settings.download.segments`: connections per download where the job and route don't say.
    let downloadSegments: Int
    /// What jobs captured (`capture:`), when any job captures.
    let captures: CaptureStore?
    /// The fan-out spools each source job feeds, by job id.
    let spoolsBySource: [String: [FanOutSpool]]
    /// Every fan-out spool of the run.
    let spools: [FanOutSpool]
    /// The greatest `incremental.from` value each running incremental job's responses held.
    private let incrementalFound = LockedBox([String: String]())
    private let authenticators: [(options: OAuth2Options, interceptor: AuthenticationInterceptor<OAuth2Authenticator>)]
    /// Request options per `jobs:` entry: its expansions share one behaviour, so the retry policy,
    /// validator and redirector are built once per entry, not once per job.
    private let optionsByEntry: [ObjectIdentifier: RequestOptions]

    /// The run's id, recorded with each incremental cursor it advances.
    let runID: String

    init(runner: Runner, session: Session, runID: String) {
        self.runID = runID
        self.session = session
        monitor = runner.monitor
        redactor = runner.config.redactor
        secretHeaders = runner.config.secretHeaders
        store = runner.options.stateStore
        resumes = runner.options.resumes
        offline = runner.options.offline
        outputGuard = OutputGuard(outputDir: runner.settings.outputDir)
        downloadSegments = runner.settings.downloadSegments
        var spools: [FanOutSpool] = []
        var spoolsBySource: [String: [FanOutSpool]] = [:]
        for entry in runner.plan.dataFileJobs {
            guard let forEach = entry.forEach else { continue }
            let spool = FanOutSpool(path: entry.file.path, entry: entry.id, items: forEach.items, sources: entry.waitsFor)
            if spool.sources.count > 1 {
                // A matrix source's jobs share the spool: opened once, and their crawls start over
                // (one job's recorded progress can't say what the others wrote).
                try? spool.open(keeping: 0)
                for source in spool.sources { try? runner.options.stateStore?.clearPaginationProgress(job: source) }
            }
            spools.append(spool)
            for source in entry.waitsFor { spoolsBySource[source, default: []].append(spool) }
        }
        self.spools = spools
        self.spoolsBySource = spoolsBySource
        // Every `jobs:` entry, once: the written-out jobs' and the data files' (whose jobs are made
        // as the run goes, and would otherwise have had no token and their options built per job).
        // Each job's entry read in place: a `for` loop over the jobs copied each job (20 retains and
        // releases a job of the run).
        var entries: [ExpandedJob.Common] = []
        var seenEntries = Set<ObjectIdentifier>()
        let jobs = runner.plan.jobs
        for index in jobs.indices {
            let common = jobs[index].common
            if seenEntries.insert(ObjectIdentifier(common)).inserted { entries.append(common) }
        }
        for entry in runner.plan.dataFileJobs where seenEntries.insert(ObjectIdentifier(entry.common)).inserted { entries.append(entry.common) }
        captures = entries.contains { !$0.spec.captures.isEmpty } ? CaptureStore(secrets: runner.config.learntSecrets) : nil
        var authenticators: [(OAuth2Options, AuthenticationInterceptor<OAuth2Authenticator>)] = []
        for entry in entries {
            guard case .oauth2(let options)? = entry.behaviour.auth, !authenticators.contains(where: { $0.0 == options }) else { continue }
            let service = entry.route.spec?.service ?? URL(string: options.tokenURL)?.host ?? "oauth2"
            authenticators.append((options, AuthenticationInterceptor(authenticator: OAuth2Authenticator(options: options, session: session),
                                                                      service: service, monitor: runner.monitor)))
        }
        self.authenticators = authenticators
        var optionsByEntry: [ObjectIdentifier: RequestOptions] = [:]
        for entry in entries {
            optionsByEntry[ObjectIdentifier(entry)] = Self.requestOptions(for: entry.behaviour, authenticators: authenticators,
                                                                          secretHeaders: secretHeaders, offline: offline)
        }
        self.optionsByEntry = optionsByEntry
    }

    /// The request options a job's layered behaviour asks for.
    func requestOptions(for job: ExpandedJob) -> RequestOptions {
        var options = optionsByEntry[ObjectIdentifier(job.common)]
            ?? Self.requestOptions(for: job.behaviour, authenticators: authenticators, secretHeaders: secretHeaders, offline: offline)
        options.decodesContent = job.downloadPath == nil
        // Downloads never go through the response cache: their recorded validators make a rerun up_to_date.
        if job.downloadPath != nil { options.cache = nil }
        options.job = job.id
        return options
    }

    private static func requestOptions(for behaviour: Behaviour,
                                       authenticators: [(options: OAuth2Options, interceptor: AuthenticationInterceptor<OAuth2Authenticator>)],
                                       secretHeaders: Set<String>, offline: Bool) -> RequestOptions {
        var interceptor: (any RequestInterceptor)?
        if case .oauth2(let options)? = behaviour.auth {
            interceptor = authenticators.first { $0.options == options }?.interceptor
        }
        return RequestOptions(timeouts: TransportTimeouts(behaviour.timeout), tls: behaviour.tls, validator: ResponseValidator(behaviour.validate),
                              redirector: Redirector(behaviour.redirect, credentialHeaders: secretHeaders),
                              retryPolicy: RetryPolicy(behaviour.retry), interceptor: interceptor,
                              cache: RequestCacheOptions(behaviour, offline: offline))
    }

    /// Runs one job to its result; never throws.
    func execute(_ job: ExpandedJob) async -> JobResult {
        let started = ContinuousClock.now
        monitor.jobDidStart(job.id)
        // Most jobs use neither captures nor a cursor: they run as they are, without a copy.
        guard job.spec.incremental != nil || !job.common.captureUses.isEmpty else {
            let result = await run(job, started: started)
            monitor.jobDidFinish(result)
            return result
        }
        var job = job
        var incrementalStart: String?
        if let incremental = job.spec.incremental {
            let cursor = (try? store?.incrementalCursor(job: job.id)) ?? nil
            incrementalStart = cursor ?? incremental.initial
            setIncrementalCursor(incrementalStart!, of: incremental, in: &job)
        }
        if !job.common.captureUses.isEmpty {
            do {
                try fillCaptures(into: &job)
            } catch {
                let result = JobResult(job: job.id, outcome: .failed, attempts: 0, error: error as? FetchError, duration: .now - started)
                monitor.jobDidFinish(result)
                return result
            }
        }
        let result = await run(job, started: started)
        if let start = incrementalStart, let incremental = job.spec.incremental, result.isSuccess {
            advanceIncrementalCursor(of: job, incremental, from: start)
        }
        monitor.jobDidFinish(result)
        return result
    }

    /// The job to its result, by where its body goes.
    private func run(_ job: ExpandedJob, started: ContinuousClock.Instant) async -> JobResult {
        // Each sink type gets its own call, so the session's generic pipeline is specialized for it
        // instead of going through an existential's witness tables on every step.
        let result: JobResult
        if let escape = outputEscape(job.downloadPath ?? job.savePath) ?? outputEscape(job.headersPath) ?? outputEscape(job.itemsPath) {
            result = JobResult(job: job.id, outcome: .failed, attempts: 0, error: escape, duration: .now - started)
        } else if let pagination = job.pagination {
            result = await executePaginated(job, pagination: pagination, started: started)
        } else if offline, let download = job.downloadPath {
            result = offlineDownload(job, destination: download, started: started)
        } else if let download = job.downloadPath, segments(of: job) > 1 {
            result = await executeSegmented(job, destination: download, started: started)
        } else if let download = job.downloadPath {
            // A route's `download: {resumable: false}` turns off Range requests for servers that mishandle them.
            let resumable = resumes && job.route.download?.resumable != false
            let sink = DownloadSink(destination: download, job: job.id, checksum: job.spec.checksum, store: store, resumes: resumable,
                                    monitor: monitor, redactor: redactor)
            result = await execute(job, sink: sink, path: download, started: started) { sink.isUpToDate }
        } else if let save = job.savePath {
            result = await execute(job, sink: FileSink.save(to: save), path: save, started: started)
        } else {
            result = await execute(job, sink: DiscardSink(), path: nil, started: started)
        }
        return result
    }

    private func execute<Sink: ResponseSink>(_ job: ExpandedJob, sink: Sink, path: String?, started: ContinuousClock.Instant,
                                             isUpToDate: () -> Bool = { false }) async -> JobResult {
        let spools = spoolsBySource.isEmpty ? [] : spoolsBySource[job.id] ?? []
        if !job.spec.captures.isEmpty || !spools.isEmpty || job.spec.incremental != nil {
            let capturing = CapturingSink(inner: sink, keepsBody: !spools.isEmpty || job.spec.incremental != nil
                                            || job.spec.captures.contains { $0.source.readsBody })
            var result = await execute(job, anySink: capturing, path: path, started: started, isUpToDate: isUpToDate)
            guard result.outcome != .failed, let head = capturing.head else { return result }
            if !job.spec.captures.isEmpty { recordCaptures(of: job, head: head, body: capturing.body) }
            if let incremental = job.spec.incremental, let body = capturing.body, let document = try? JSONValue.parse(body),
               let found = incremental.greatest(in: document) {
                incrementalFound.withLock { $0[job.id] = found }
            }
            if !spools.isEmpty, let failure = feed(spools, from: job, body: capturing.body) {
                result = JobResult(job: job.id, outcome: .failed, status: result.status, bytes: result.bytes, attempts: result.attempts,
                                   error: failure, duration: result.duration)
            }
            return result
        }
        return await execute(job, anySink: sink, path: path, started: started, isUpToDate: isUpToDate)
    }

    private func execute<Sink: ResponseSink>(_ job: ExpandedJob, anySink sink: Sink, path: String?, started: ContinuousClock.Instant,
                                             isUpToDate: () -> Bool) async -> JobResult {
        let options = requestOptions(for: job)
        do {
            let response = try await session.execute(job.router, options: options, sink: sink)
            let outcome: JobResult.Outcome = response.cache == .hit ? .cached : isUpToDate() ? .upToDate : .succeeded
            // An up-to-date download got a bodiless 304: the headers file written with the file still describes it.
            if let headersPath = job.headersPath, outcome != .upToDate {
                try await ResponseHeadersFile.write(response.head, to: headersPath, redactor: redactor)
            }
            return JobResult(job: job.id, outcome: outcome, status: response.status, bytes: response.bytes,
                             attempts: response.attempts, duration: .now - started, path: path, cache: options.cache == nil ? nil : response.cache)
        } catch {
            let failure = error as? FetchError ?? FetchError(.io, redactor.redact("\(error)"))
            return JobResult(job: job.id, outcome: .failed, status: failure.status, attempts: failure.attempts ?? 1,
                             error: failure, duration: .now - started)
        }
    }

    /// A job that pages through results (`Paginator`).
    private func executePaginated(_ job: ExpandedJob, pagination: Pagination, started: ContinuousClock.Instant) async -> JobResult {
        var paginator = Paginator(job: job, pagination: pagination, session: session, options: requestOptions(for: job), monitor: monitor,
                                  store: store, resumes: resumes, redactor: redactor, secretHeaders: secretHeaders)
        paginator.spools = spoolsBySource[job.id] ?? []
        paginator.incremental = job.spec.incremental?.from
        paginator.opensSpools = paginator.spools.allSatisfy { $0.sources.count == 1 }
        do {
            let outcome = try await paginator.run()
            if !job.spec.captures.isEmpty {
                if let last = outcome.lastPage {
                    recordCaptures(of: job, head: last.head, body: last.body)
                } else {
                    // A crawl finished by an earlier run, or ended by `stop.status` at once: no page to capture from.
                    captures?.record(job: job.id, Dictionary(uniqueKeysWithValues: job.spec.captures.map {
                        ($0.name, CaptureStore.Entry.missing("job '\(job.id)' fetched no page in this run to take '\($0.name)' from"))
                    }))
                }
            }
            // A crawl cut short (max_pages, a loop) may have left pages below the values it found.
            if let found = outcome.incremental, !outcome.truncated { incrementalFound.withLock { $0[job.id] = found } }
            if let headersPath = job.headersPath, let last = outcome.lastPage {
                try await ResponseHeadersFile.write(last.head, to: headersPath, redactor: redactor)
            }
            return JobResult(job: job.id, outcome: outcome.allCached && outcome.pages > 0 ? .cached : .succeeded, status: outcome.status,
                             bytes: outcome.bytes, attempts: outcome.requests, duration: .now - started, path: job.itemsPath ?? job.savePath)
        } catch {
            let failure = error as? FetchError ?? FetchError(.io, redactor.redact("\(error)"))
            return JobResult(job: job.id, outcome: .failed, status: failure.status, attempts: failure.attempts ?? 1,
                             error: failure, duration: .now - started)
        }
    }

    /// Connections for a job's download: the job's `segments`, else its route's, else the settings';
    /// 1 where the route turns ranges off.
    func segments(of job: ExpandedJob) -> Int {
        guard job.route.download?.resumable != false else { return 1 }
        return job.spec.downloadSegments?.count ?? job.route.download?.segments ?? downloadSegments
    }

    /// A download over several connections (`SegmentedDownload`), or over one where the server
    /// can't split it.
    private func executeSegmented(_ job: ExpandedJob, destination: String, started: ContinuousClock.Instant) async -> JobResult {
        let options = requestOptions(for: job)
        let download = SegmentedDownload(destination: destination, job: job.id, segments: segments(of: job), checksum: job.spec.checksum,
                                         store: store, resumes: resumes, monitor: monitor, redactor: redactor)
        do {
            if let outcome = try await download.run(job.router, options: options, session: session) {
                return JobResult(job: job.id, outcome: .succeeded, status: outcome.status, bytes: outcome.bytes, attempts: outcome.requests,
                                 duration: .now - started, path: destination)
            }
        } catch {
            let failure = error as? FetchError ?? FetchError(.io, redactor.redact("\(error)"))
            return JobResult(job: job.id, outcome: .failed, status: failure.status, attempts: failure.attempts ?? 1,
                             error: failure, duration: .now - started)
        }
        let sink = DownloadSink(destination: destination, job: job.id, checksum: job.spec.checksum, store: store, resumes: resumes,
                                monitor: monitor, redactor: redactor)
        return await execute(job, sink: sink, path: destination, started: started) { sink.isUpToDate }
    }

    /// The `path_escape` failure for a destination outside `output_dir`, if it is one.
    private func outputEscape(_ path: String?) -> FetchError? {
        guard let path else { return nil }
        do {
            try outputGuard.check(path)
            return nil
        } catch {
            return error as? FetchError
        }
    }

    /// `--offline` and a download: the finished file on disk is all there is (downloads never go
    /// through the response cache); without one the job fails with `not_cached`.
    private func offlineDownload(_ job: ExpandedJob, destination: String, started: ContinuousClock.Instant) -> JobResult {
        let record = try? store?.download(at: destination)
        if let record, record.completed, let size = FileIO.size(destination), record.totalLength == nil || record.totalLength == size {
            return JobResult(job: job.id, outcome: .cached, bytes: 0, attempts: 0, duration: .now - started, path: destination)
        }
        let url = (try? job.router.makeRequest().url.absoluteString).map(redactor.redact)
        return JobResult(job: job.id, outcome: .failed, attempts: 0,
                         error: FetchError(.notCached, "--offline: the download is not on disk yet", url: url), duration: .now - started)
    }

    // MARK: - Captures

    /// Puts the captures the job uses into its bindings (and into params that use them), or
    /// throws `capture_missing` naming the one its job's response did not have.
    private func fillCaptures(into job: inout ExpandedJob) throws {
        for use in job.common.captureUses {
            switch captures?.entry(job: use.job, name: use.name) {
            case .value(let value)?:
                job.bindings[use.placeholder] = .string(value)
            case .missing(let why)?:
                throw FetchError(.captureMissing, "job '\(job.id)' uses {{\(use.placeholder)}}, and \(why)")
            case nil:
                throw FetchError(.captureMissing, "job '\(job.id)' uses {{\(use.placeholder)}}, and job '\(use.job)' captured nothing (it did not run to success)")
            }
        }
        let bindings = job.bindings
        for (name, value) in job.params {
            guard case .string(let text) = value, text.contains("{{jobs.") else { continue }
            let filled = ParameterValue.string(Template(text).render { bindings[$0]?.text })
            guard let param = job.route.param(named: name) else {
                job.params[name] = filled
                continue
            }
            // A route param takes the captured text in its type, as a written value would be checked.
            switch ParamChecker.check(filled, against: param) {
            case .success(let value): job.params[name] = value
            case .failure(let problem):
                throw FetchError(.invalidRequest, "job '\(job.id)': param '\(name)' \(redactor.redact(problem.message)) (from a capture)")
            }
        }
    }

    /// Takes the job's captures from its response; secret ones join the redactor's secrets first.
    private func recordCaptures(of job: ExpandedJob, head: TransportResponseHead, body: Data?) {
        guard let captures else { return }
        var entries: [String: CaptureStore.Entry] = [:]
        for capture in job.spec.captures {
            if let value = capture.value(head: head, body: body) {
                if capture.secret { captures.secrets?.add(value) }
                entries[capture.name] = .value(value)
            } else {
                entries[capture.name] = .missing("job '\(job.id)''s response has nothing at \(capture.source.description) (capture '\(capture.name)')")
            }
        }
        captures.record(job: job.id, entries)
    }

    // MARK: - Fan-out

    /// Appends the records of a (not paginated) source job's body to the fan-outs it feeds; the
    /// failure, when the body is not JSON or the spool can't be written.
    private func feed(_ spools: [FanOutSpool], from job: ExpandedJob, body: Data?) -> FetchError? {
        guard let body else { return FetchError(.validation, "the response is larger than 64 MiB, too large to fan out over") }
        let document: JSONValue
        do {
            document = try JSONValue.parse(body)
        } catch {
            return FetchError(.validation, "the response is not JSON (\(error)), so for_each \(spools.map(\.entry).joined(separator: ", ")) has no records")
        }
        do {
            for spool in spools {
                if spool.sources.count == 1 { try spool.open(keeping: 0) }
                try spool.append(from: document)
                try spool.sync()
            }
        } catch {
            return error as? FetchError ?? FetchError(.io, "\(error)")
        }
        return nil
    }

    // MARK: - Incremental

    /// Sends the job's cursor: as the route's param of that name (in the route's type), else as a
    /// query parameter or JSON body member (`ExpandedJob.router`).
    private func setIncrementalCursor(_ cursor: String, of incremental: IncrementalSpec, in job: inout ExpandedJob) {
        if let param = job.route.param(named: incremental.param) {
            switch ParamChecker.check(.string(cursor), against: param) {
            case .success(let value): job.params[incremental.param] = value
            case .failure: job.params[incremental.param] = .string(cursor)
            }
        } else if job.route.isAdHoc, job.spec.params.contains(where: { $0.name == incremental.param }) {
            job.params[incremental.param] = .string(cursor)
        } else {
            job.bindings[ExpandedJob.incrementalCursorKey] = .string(cursor)
        }
    }

    /// Once the job fully succeeded: the greatest value its responses held becomes the next run's
    /// cursor (never an earlier one than this run started from).
    private func advanceIncrementalCursor(of job: ExpandedJob, _ incremental: IncrementalSpec, from start: String) {
        guard let found = incrementalFound.withLock({ $0.removeValue(forKey: job.id) }) else { return }
        let next = IncrementalSpec.later(start, found)
        guard next != start, redactor.redact(next) == next else { return }
        try? store?.saveIncrementalCursor(next, job: job.id, runID: runID)
    }
}
