import Crypto
import Foundation
import NIOCore

/// Runs one paginated job: requests page after page through the session (each with the job's
/// retry, rate limit, cache and auth), writes each page's outputs, records the page as committed,
/// and works out the next request, until the pages run out or a stop rule ends them.
///
/// Pages are fetched one after another: a next link or cursor is known only from the page before.
/// After a crash, the run continues after the last committed page (`PaginationProgress`).
struct Paginator {
    let job: ExpandedJob
    let pagination: Pagination
    let session: Session
    let options: RequestOptions
    let monitor: CompositeEventMonitor
    let store: StateStore?
    let resumes: Bool
    let redactor: Redactor
    let secretHeaders: Set<String>
    /// The fan-outs this job's pages feed (each page's records appended to them).
    var spools: [FanOutSpool] = []
    /// Whether this job opens the spools (it is their only source); a matrix source's spools are
    /// opened once for all its jobs.
    var opensSpools = true
    /// `incremental.from`: the greatest value the pages hold is collected.
    var incremental: JSONPath?

    struct Outcome {
        var status: Int?
        var bytes: Int64 = 0
        var requests = 0
        var pages = 0
        var records = 0
        /// Every page came from the response cache.
        var allCached = true
        /// Pagination ended early (`max_pages`, a loop): there may be pages not fetched, so an
        /// incremental cursor must not move past them.
        var truncated = false
        /// The greatest `incremental.from` value of the pages.
        var incremental: String?
        /// The last page's head and body (for captures).
        var lastPage: (head: TransportResponseHead, body: Data)?
    }

    /// Fetches every page. Throws a `FetchError` for the job's failure; the pages committed before
    /// it stay recorded, so the next run continues after them.
    func run() async throws -> Outcome {
        let firstRequest = try buildFirstRequest()
        let fingerprint = Self.digest(pagination.fingerprint + "\u{1F}" + Self.describe(firstRequest))
        let items = job.itemsPath.map(ItemsFile.init)
        var outcome = Outcome()
        var cursor = PageRequest.firstCursor(of: pagination.next)
        // The next links and cursors followed, as 64-bit hashes: 8 bytes a page. Kept for this run
        // only (a per-page row in the state store made its page cache grow with the crawl).
        var seen = HashSet64(expected: min(pagination.stop.maxPages, 1024))
        var finished = false
        if let recorded = try recordedProgress(fingerprint: fingerprint) {
            try items?.open(keeping: recorded.itemsBytes)
            if opensSpools {
                for spool in spools { try spool.open(keeping: recorded.spoolBytes[spool.entry] ?? 0) }
            }
            outcome.pages = recorded.page
            outcome.records = recorded.records
            outcome.bytes = recorded.bytes
            outcome.requests = recorded.requests
            outcome.allCached = false
            outcome.incremental = recorded.incremental
            outcome.truncated = recorded.truncated
            if recorded.next == "end" || recorded.next == "end-truncated" {
                finished = true
            } else if let next = PageCursor(encoded: recorded.next) {
                cursor = next
            }
            monitor.paginationDidResume(job: job.id, page: recorded.page)
        } else {
            try? store?.clearPaginationProgress(job: job.id)
            try items?.open(keeping: 0)
            if opensSpools { for spool in spools { try spool.open(keeping: 0) } }
        }
        if case .first = cursor { _ = seen.insert(FNV1a.hash(Self.loopKey(firstRequest.url.absoluteString))) }
        while !finished {
            let page = outcome.pages + 1
            let sink = PageSink(stopStatuses: pagination.stop.statuses)
            let request = PageRequest(router: job.router, next: pagination.next, cursor: cursor, credentialHeaders: secretHeaders)
            var pageOptions = options
            if case .url(let target) = cursor, let url = URL(string: target), !PageRequest.sameOrigin(url, firstRequest.url) {
                // An interceptor's credential (OAuth2) stays with the first request's origin too.
                pageOptions.interceptor = nil
            }
            let response = try await session.execute(request, options: pageOptions, sink: sink)
            outcome.requests += response.attempts
            outcome.bytes += response.bytes
            outcome.status = response.status
            if response.cache != .hit { outcome.allCached = false }
            if pagination.stop.statuses?.contains(response.status) == true {
                // `stop.status`: no page here, and none after.
                try commit(outcome, next: nil, fingerprint: fingerprint, items: items)
                break
            }
            let body = sink.body
            outcome.lastPage = (sink.head ?? response.head, body)
            var document: JSONValue?
            if pagination.readsJSON || !spools.isEmpty || incremental != nil {
                do {
                    document = try JSONValue.parse(body)
                } catch {
                    throw FetchError(.validation, "page \(page) is not JSON (\(error))", url: redactor.redact(response.request.url.absoluteString),
                                     status: response.status)
                }
            }
            let records = document.flatMap { doc in pagination.items.map { $0.records(in: doc) } }
            if let template = job.savePath {
                try await savePage(body, head: sink.head ?? response.head, to: template.replacingOccurrences(of: "{{page}}", with: String(page)))
            }
            try items?.append(records ?? [])
            if let document { for spool in spools { try spool.append(from: document) } }
            if let incremental, let document, let found = IncrementalSpec.greatest(incremental, in: document) {
                outcome.incremental = outcome.incremental.map { IncrementalSpec.later($0, found) } ?? found
            }
            outcome.pages = page
            outcome.records += records?.count ?? 0
            var next = nextCursor(after: cursor, response: response, document: document, records: records, fetched: outcome.records)
            var stopped: String?
            if let candidate = next {
                if !seen.insert(FNV1a.hash(Self.loopKey(candidate))) {
                    stopped = "loop"
                } else if page >= pagination.stop.maxPages {
                    stopped = "max_pages"
                }
            }
            if stopped != nil {
                next = nil
                outcome.truncated = true
            }
            try commit(outcome, next: next, fingerprint: fingerprint, items: items)
            monitor.paginationDidFetchPage(job: job.id, page: page, records: records?.count)
            if let stopped { monitor.paginationDidStop(job: job.id, page: page, reason: stopped) }
            guard let next else { break }
            cursor = next
        }
        try items?.finish()
        try? store?.clearPaginationProgress(job: job.id)
        return outcome
    }

    private func buildFirstRequest() throws -> BuiltRequest {
        do {
            return try PageRequest(router: job.router, next: pagination.next, cursor: PageRequest.firstCursor(of: pagination.next),
                                   credentialHeaders: secretHeaders).makeRequest()
        } catch {
            throw FetchError(.invalidRequest, redactor.redact("\(error)"))
        }
    }

    /// The progress an earlier run recorded for this job, when it can be continued: resuming is
    /// on, it was made by this pagination of this first request, and its records are on disk.
    private func recordedProgress(fingerprint: String) throws -> PaginationProgress? {
        guard resumes, let store, let recorded = try store.paginationProgress(job: job.id), recorded.fingerprint == fingerprint else { return nil }
        if let path = job.itemsPath, (FileIO.size(path + ".part") ?? -1) < recorded.itemsBytes { return nil }
        // The fan-outs it feeds must hold what the committed pages gave them.
        if opensSpools, Set(recorded.spoolBytes.keys) != Set(spools.map(\.entry))
            || spools.contains(where: { (FileIO.size($0.path) ?? -1) < recorded.spoolBytes[$0.entry] ?? 0 }) {
            return nil
        }
        return recorded
    }

    /// Syncs the page's records and records the page as committed. The next link or cursor is
    /// recorded only when it holds no secret; otherwise nothing is, and a rerun starts at page 1.
    private func commit(_ outcome: Outcome, next: PageCursor?, fingerprint: String, items: ItemsFile?) throws {
        try items?.sync()
        for spool in spools { try spool.sync() }
        guard let store else { return }
        let encoded = next?.encoded ?? (outcome.truncated ? "end-truncated" : "end")
        guard redactor.redact(encoded) == encoded else {
            try? store.clearPaginationProgress(job: job.id)
            return
        }
        try store.savePaginationProgress(PaginationProgress(fingerprint: fingerprint, page: outcome.pages, next: encoded, records: outcome.records,
                                                            itemsBytes: items?.length ?? 0, bytes: outcome.bytes, requests: outcome.requests,
                                                            spoolBytes: opensSpools ? Dictionary(spools.map { ($0.entry, $0.length) }, uniquingKeysWith: { a, _ in a }) : [:],
                                                            incremental: outcome.incremental),
                                         job: job.id)
    }

    /// The request after this page's, or nil when this was the last page.
    private func nextCursor(after cursor: PageCursor, response: Response, document: JSONValue?, records: [JSONValue]?,
                            fetched: Int) -> PageCursor? {
        let stop = pagination.stop
        if stop.whenEmpty, let records, records.isEmpty { return nil }
        if let total = stop.total, let document, let limit = total.first(in: document)?.text.flatMap(Double.init), Double(fetched) >= limit {
            return nil
        }
        if let whilePath = stop.whilePath, let document, !(whilePath.first(in: document)?.isTruthy ?? false) { return nil }
        switch pagination.next {
        case .linkHeader(let rel):
            guard let target = LinkHeader.target(rel: rel, in: response.head.headers.values(for: "Link")) else { return nil }
            return URL(string: target, relativeTo: response.request.url).map { .url($0.absoluteString) }
        case .json(let path):
            guard let document, let target = path.first(in: document)?.text, !target.isEmpty else { return nil }
            return URL(string: target, relativeTo: response.request.url).map { .url($0.absoluteString) }
        case .cursor(let from, _):
            guard let document, let value = from.first(in: document)?.text, !value.isEmpty else { return nil }
            return .cursor(value)
        case .offset(_, _, let limit, _):
            // A short page is the last one.
            if let records, records.count < limit { return nil }
            guard case .number(let offset) = cursor else { return nil }
            let (next, overflow) = offset.addingReportingOverflow(limit)
            return overflow ? nil : .number(next)
        case .page:
            guard case .number(let number) = cursor, number < Int.max else { return nil }
            return .number(number + 1)
        }
    }

    /// Writes one page's body to its own file, atomically (`FileSink`).
    private func savePage(_ body: Data, head: TransportResponseHead, to path: String) async throws {
        // Synced: the page is recorded as committed right after, and never fetched again.
        let sink = FileSink.save(to: path, durable: true)
        do {
            try sink.open(head)
            var buffer = ByteBuffer()
            buffer.writeBytes(body)
            try sink.write(buffer)
            try await sink.finish()
        } catch {
            await sink.abandon()
            throw error
        }
    }

    /// What decides the first request, for the fingerprint: method, URL and body (a GraphQL query's
    /// variables change the crawl as much as its URL does).
    static func describe(_ request: BuiltRequest) -> String {
        var text = request.method.rawValue + " " + request.url.absoluteString
        switch request.body {
        case .none: break
        case .data(let data): text += "\u{1F}" + SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        case .file(let path): text += "\u{1F}file:" + path
        case .multipart: text += "\u{1F}multipart"
        }
        return text
    }

    /// What makes two next requests the same for loop detection: the URL without its fragment.
    static func loopKey(_ cursor: PageCursor) -> String {
        switch cursor {
        case .url(let url): loopKey(url)
        default: cursor.encoded
        }
    }

    static func loopKey(_ url: String) -> String {
        "url:" + (url.firstIndex(of: "#").map { String(url[..<$0]) } ?? url)
    }

    /// The fingerprint is kept as a digest, so no URL (and no secret in one) reaches the state store.
    static func digest(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
