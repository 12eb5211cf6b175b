import Foundation
import NIOCore

/// Wraps a job's sink for one cached request: passes the accepted response through to `inner`
/// while copying its body into the response cache, and keeps a `304` to the session's own
/// conditional request away from `inner` (the session then answers from the stored body).
///
/// The copy is stored only after `inner` finished (the job's file is in place) and only when the
/// whole body arrived; a failure to write the copy drops it (with a `cache.warning`), never the job.
/// A sink that wants to know when the session follows a redirect within an attempt.
protocol RedirectObserving {
    func willFollowRedirect()
}

final class CachingSink<Inner: ResponseSink>: ResponseSink, RedirectObserving {
    let inner: Inner
    private let cache: any ResponseCache
    private let lookup: CacheLookup
    private let revalidating: CachedResponse?
    private let monitor: CompositeEventMonitor
    /// `cache` when it is the SQLite store (found once per session, not cast per response): a
    /// response the behaviour keeps unchanged is stored from its head, with no `CachedResponse`.
    private let direct: SQLiteResponseCache?
    private let state = LockedBox(State())

    private struct State {
        var sent: BuiltRequest?
        var requestTime = Date()
        var responseTime = Date()
        var notModified: TransportResponseHead?
        var head: TransportResponseHead?
        var writer: (any CacheBodyWriter)?
        /// What `mayStore` found the response varies on, for the entry stored with the body.
        var varyNames: [String] = []
        /// The attempt followed a redirect: the response that arrives is another URL's.
        var redirected = false
    }

    init(inner: Inner, cache: any ResponseCache, direct: SQLiteResponseCache? = nil, lookup: CacheLookup, revalidating: CachedResponse?,
         monitor: CompositeEventMonitor) {
        self.inner = inner
        self.cache = cache
        self.direct = direct
        self.lookup = lookup
        self.revalidating = revalidating
        self.monitor = monitor
    }

    /// The `304` the revalidation got, if it did.
    var notModified: TransportResponseHead? { state.withLock { $0.notModified } }
    var requestTime: Date { state.withLock { $0.requestTime } }
    var responseTime: Date { state.withLock { $0.responseTime } }

    var cacheUse: RequestMetrics.CacheUse { notModified == nil ? .miss : .revalidated }

    func prepare(_ request: BuiltRequest, attempt: Int) async throws -> BuiltRequest {
        let prepared = try await inner.prepare(request, attempt: attempt)
        state.withLock { s in
            s.sent = prepared
            s.requestTime = Date()
            s.notModified = nil
            s.redirected = false
        }
        return prepared
    }

    /// A redirected response is not stored under the URL the job asked for: a `302` to a file with
    /// a year's `max-age` must not answer the first URL for a year (RFC 9111 stores responses under
    /// the URL that produced them).
    func willFollowRedirect() {
        state.withLock { $0.redirected = true }
    }

    func handles(status: Int) -> Bool {
        (status == 304 && revalidating != nil) || inner.handles(status: status)
    }

    func open(_ head: TransportResponseHead) throws {
        let now = Date()
        let (sent, redirected) = state.withLock { s -> (BuiltRequest?, Bool) in
            s.responseTime = now
            s.head = head
            s.writer?.discard()
            s.writer = nil
            return (s.sent, s.redirected)
        }
        if head.status == 304, revalidating != nil {
            state.withLock { $0.notModified = head }
            return
        }
        guard let sent, !redirected, let varyNames = lookup.mayStore(head, sent: sent) else { return try inner.open(head) }
        // A `save:` writes the body into the cache's own file and links it into place: one copy.
        var writer: (any CacheBodyWriter)?
        if let staged = inner as? any StagedFileSink, let target = staged.linkTarget, let shared = cache.makeSharedBodyWriter(for: target.destination),
           let file = shared.sharedFile {
            do {
                shared.sharedFileOpened(try staged.open(head, sharing: file))
                writer = shared
            } catch {
                shared.discard()  // the cache's directory refused the file: save as usual, store a copy
            }
        }
        if writer == nil {
            try inner.open(head)
            writer = cache.makeBodyWriter()
        }
        state.withLock { s in
            s.writer = writer
            s.varyNames = varyNames
        }
    }

    func write(_ chunk: ByteBuffer) throws {
        try inner.write(chunk)
        guard let writer = state.withLock({ $0.writer }) else { return }
        do {
            try writer.write(chunk)
        } catch {
            writer.discard()
            state.withLock { $0.writer = nil }
            monitor.responseCacheDidReport(CacheProblem(path: (error as? FetchError)?.url ?? "cache", message: "\(error)"))
        }
    }

    func finish() async throws {
        let (notModified, head, collected, sent, requestTime, responseTime, varyNames) = state.withLock { s in
            defer { s.writer = nil }
            return (s.notModified, s.head, s.writer, s.sent, s.requestTime, s.responseTime, s.varyNames)
        }
        if notModified != nil { return }
        var writer = collected
        do {
            // Before the inner sink moves (or links) its file into place.
            try writer?.complete()
        } catch {
            writer?.discard()
            writer = nil
            monitor.responseCacheDidReport(CacheProblem(path: (error as? FetchError)?.url ?? "cache", message: "\(error)"))
        }
        do {
            try await inner.finish()
        } catch {
            writer?.discard()
            throw error
        }
        guard let head, let sent else { writer?.discard(); return }
        if sent.method == .head { await lookup.headDidArrive(head, cache: cache) }
        guard let writer else { return }
        if let direct, lookup.options.handler.storesUnchanged,
           let headers = CacheRules.encodedStoredHeaders(from: head.headers, receivedAt: responseTime, decodedContent: lookup.decodesContent) {
            await direct.store(method: lookup.request.method, url: lookup.url, varyNames: varyNames.isEmpty ? nil : varyNames,
                               varyKey: lookup.varyKey(varyNames), status: head.status, encodedHeaders: headers, requestTime: requestTime,
                               responseTime: responseTime, ttl: nil, body: writer)
            return
        }
        guard let entry = lookup.entryToStore(head, sent: sent, varyNames: varyNames, requestTime: requestTime, responseTime: responseTime, bodySize: writer.size) else {
            writer.discard()
            return
        }
        await cache.store(entry, body: writer)
    }

    func abandon() async {
        let writer = state.withLock { s -> (any CacheBodyWriter)? in
            defer { s.writer = nil }
            return s.writer
        }
        writer?.discard()
        await inner.abandon()
    }
}
