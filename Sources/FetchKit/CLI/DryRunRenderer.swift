import Foundation

/// `--dry-run`: the plan in order, each job with what it needs and where its output goes, whether
/// the response cache would answer it, and its request as a cURL command with secrets redacted.
/// Nothing is sent.
public struct DryRunRenderer: Sendable {
    public var redactor: Redactor
    /// Read to say which jobs the cache would answer; nil when there is none yet.
    public var cache: (any ResponseCache)?
    public var offline: Bool
    /// `settings.http_version`, shown as curl's `--http1.1`.
    public var httpVersion: AsyncHTTPClientTransport.HTTPVersion
    /// Shown as curl's `--proxy` with its credentials redacted.
    public var proxies: ProxyResolver

    public init(redactor: Redactor, cache: (any ResponseCache)? = nil, offline: Bool = false,
                httpVersion: AsyncHTTPClientTransport.HTTPVersion = .auto, proxies: ProxyResolver = .direct) {
        self.redactor = redactor
        self.cache = cache
        self.offline = offline
        self.httpVersion = httpVersion
        self.proxies = proxies
    }

    public func render(_ plan: RunPlan) async -> String {
        let total = plan.dataFileJobs.isEmpty ? plan.jobs.count : plan.jobCountEstimate
        var out = "# \(total) job\(total == 1 ? "" : "s"), in order; nothing is sent\n"
        for job in plan.jobs { out += await render(job) }
        for entry in plan.dataFileJobs {
            if let forEach = entry.forEach {
                // Its records come from a job that has not run: nothing to show but what it is.
                out += "\n# \(entry.id): one job per record of \(forEach.job)'s responses at \(forEach.items.text), as {{\(forEach.name).…}}; made when \(forEach.job) has run\n"
                continue
            }
            // A data file's jobs: how many, and the first few as they would run.
            let count = (try? entry.count()).map { "\($0) record\($0 == 1 ? "" : "s")" } ?? "unreadable"
            out += "\n# \(entry.id): one job per record of \(entry.file.displayPath) (\(entry.file.format.rawValue), \(count)); the first \(Self.dataFileSample) shown\n"
            let feed = DataFileFeed([entry], shard: plan.shard)
            var shown = 0
            while shown < Self.dataFileSample, let item = feed.next(results: { _ in nil }) {
                shown += 1
                switch item {
                case .job(let job): out += await render(job)
                case .failed(let result): out += "\n# \(result.job) fails: \(result.error?.message ?? "")\n"
                case .blocked: shown = Self.dataFileSample
                }
            }
        }
        return out
    }

    /// Jobs of each data file shown in full.
    static let dataFileSample = 3

    private func render(_ job: ExpandedJob) async -> String {
        let renderer = RequestRenderer(redactor: redactor)
        var out = "\n# \(job.id)"
        if !job.needs.isEmpty { out += " (needs \(job.needs.joined(separator: ", ")))" }
        if let path = job.downloadPath { out += " → download \(path)" } else if let path = job.savePath { out += " → save \(path)" }
        out += "\n"
        if let line = await cachePlan(job) { out += "# cache: \(line)\n" }
        if let line = Self.tlsLine(job.behaviour.tls) { out += "# tls: \(line)\n" }
        if let pagination = job.pagination {
            out += "# pages: \(RouteTable.describe(pagination)), up to \(pagination.stop.maxPages)"
                + (job.itemsPath.map { "; records to \($0)" } ?? "") + "; page 1:\n"
        }
        if let incremental = job.spec.incremental {
            out += "# incremental: \(incremental.param) = the recorded cursor, else \(incremental.initial); advanced to the greatest \(incremental.from.text)\n"
        }
        if !job.spec.captures.isEmpty {
            out += "# captures: " + job.spec.captures.map { $0.name + ($0.secret ? " (secret)" : "") + " from " + $0.source.description }.joined(separator: ", ") + "\n"
        }
        var job = job
        for use in job.common.captureUses {
            // Known once that job has run: shown as what it stands for.
            job.bindings[use.placeholder] = .string("<\(use.placeholder)>")
        }
        if let incremental = job.spec.incremental, job.route.param(named: incremental.param) == nil {
            job.bindings[ExpandedJob.incrementalCursorKey] = .string(incremental.initial)
        }
        do {
            let request = try job.pagination.map { try job.router.makeRequest(page: 1, of: $0) } ?? job.router.makeRequest()
            out += try renderer.curl(request, tls: job.behaviour.tls, httpVersion: httpVersion, proxy: proxies.proxy(for: request.url))
            if !out.hasSuffix("\n") { out += "\n" }
        } catch {
            out += "# cannot build the request: \(redactor.redact("\(error)"))\n"
        }
        return out
    }

    /// The TLS settings in effect for a job, in words (file names and pin counts, never key
    /// material or a passphrase); nil for the defaults.
    static func tlsLine(_ tls: TLSOptions) -> String? {
        var parts: [String] = []
        if let caFile = tls.caFile {
            parts.append("trusts \(caFile) \(tls.caMode == .replace ? "instead of" : "besides") the system's CAs")
        }
        if let pins = tls.pins, !pins.isEmpty { parts.append("the server's key must match one of \(pins.count) pin\(pins.count == 1 ? "" : "s")") }
        if let certificate = tls.clientCert {
            parts.append("client certificate \(certificate)\(tls.clientKeyPassphrase != nil ? " (its key encrypted)" : "")")
        }
        if tls.insecure == true { parts.append("certificates NOT verified (insecure)") }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// What the response cache would do for `job`, for the plan; nil when it would not be consulted.
    private func cachePlan(_ job: ExpandedJob) async -> String? {
        if job.downloadPath != nil {
            return offline ? "offline: succeeds only if the finished download is on disk, else fails with not_cached" : nil
        }
        guard let request = try? job.router.makeRequest(), request.method == .get || request.method == .head else { return nil }
        guard let cache else { return offline ? "nothing stored: fails with not_cached" : "not stored: fetched" }
        let lookup = CacheLookup(sending: request, options: RequestOptions(decodesContent: true),
                                 cache: RequestCacheOptions(job.behaviour, offline: offline))
        let stored = await lookup.storedResponse(in: cache)
        let now = Date()
        switch lookup.decision(for: stored, now: now) {
        case .serve(let entry, _):
            let age = Int(lookup.freshness(of: entry).currentAge(now: now))
            return "served from the cache without a request (stored \(entry.status), age \(age)s)"
        case .notCached:
            return "nothing stored: fails with not_cached"
        case .fetch(let revalidating, let fallback):
            if revalidating != nil { return "stored but stale: revalidated with a conditional request" }
            if fallback != nil { return "stored but stale, without validators: fetched again (the stored one stands in on failure)" }
            return "not stored: fetched"
        }
    }
}
