import Foundation

extension Session {
    /// `execute` with the response cache: look up before sending (policy and RFC 9111 freshness),
    /// revalidate with a conditional request, tee accepted bodies into the store, fall back to a
    /// stale response when the network fails (`stale_if_error`), and invalidate after unsafe requests.
    ///
    /// The lookup uses the request as built plus the default headers (before adapters run), so an
    /// offline run needs no credentials from the network and `Vary` compares the same headers when
    /// storing and when looking up.
    func executeWithCache(_ initial: BuiltRequest, id: Int, options: RequestOptions, cache: any ResponseCache,
                          cacheOptions: RequestCacheOptions, sink: some ResponseSink) async throws -> Response {
        let method = initial.method
        guard method == .get || method == .head else {
            if cacheOptions.policy == .returnCacheDontLoad {
                // Offline: an unsafe request is never answered from the cache, and may not be sent.
                let info = RequestInfo(id: id, job: options.job, method: method, url: redactor.redact(initial.url.absoluteString), attempt: 1)
                throw notCached(initial, info: info, policy: cacheOptions.policy, cache: cache)
            }
            let response = try await perform(initial, id: id, options: options, sink: sink)
            if !method.isSafe, response.status < 400 { await invalidate(target: initial.url, after: response, cache: cache) }
            return response
        }
        let lookup = CacheLookup(sending: initial, options: options, cache: cacheOptions)
        let keyed = lookup.request
        let requestInfo = RequestInfo(id: id, job: options.job, method: method, url: redactor.redact(initial.url.absoluteString), attempt: 1)
        eventMonitor.requestDidCreate(requestInfo)
        let started = ContinuousClock.now

        // `reload` never uses what is stored: don't look.
        let stored = cacheOptions.policy == .reload ? nil : await lookup.storedResponse(in: cache)
        switch lookup.decision(for: stored, now: Date()) {
        case .serve(let entry, let freshness):
            if let response = try await serve(entry, as: .hit, freshness: freshness, lookup: lookup, request: keyed, info: requestInfo, options: options,
                                              cache: cache, sink: sink, started: started) {
                return response
            }
            if lookup.forbidsNetwork { throw notCached(keyed, info: requestInfo, policy: cacheOptions.policy, cache: cache) }
            return try await fetch(initial, lookup: lookup, revalidating: nil, fallback: nil, id: id, info: requestInfo, options: options,
                                   cache: cache, sink: sink, started: started)
        case .notCached:
            throw notCached(keyed, info: requestInfo, policy: cacheOptions.policy, cache: cache)
        case .fetch(let revalidating, let fallback):
            return try await fetch(initial, lookup: lookup, revalidating: revalidating, fallback: fallback, id: id, info: requestInfo,
                                   options: options, cache: cache, sink: sink, started: started)
        }
    }

    /// Sends the request (conditional when `revalidating` is set) through the pipeline with a
    /// caching sink; a `304` is answered from the store, a failure from `fallback` when allowed.
    private func fetch(_ initial: BuiltRequest, lookup: CacheLookup, revalidating: CachedResponse?, fallback: CachedResponse?, id: Int,
                       info: RequestInfo, options: RequestOptions, cache: any ResponseCache, sink: some ResponseSink,
                       started: ContinuousClock.Instant) async throws -> Response {
        var request = initial
        var options = options
        // During an outage a stored response that may stand in for a failure is served at once
        // (only a session that waits out outages asks).
        if networkWaiter != nil, let fallback {
            options.hasStaleFallback = lookup.mayServeStale(fallback, after: FetchError(.connection, "the network is down"), now: Date())
        }
        if let revalidating { lookup.addConditions(from: revalidating, to: &request) }
        // `cache` is the session's `responseCache` (`execute`), which `sqliteResponseCache` is when it is the SQLite store.
        let caching = CachingSink(inner: sink, cache: cache, direct: sqliteResponseCache, lookup: lookup, revalidating: revalidating,
                                  monitor: eventMonitor)
        let response: Response
        do {
            response = try await perform(request, id: id, options: options, sink: caching, announce: false, shown: info.url)
        } catch let error as FetchError {
            var lastAttempt = info
            lastAttempt.attempt = error.attempts ?? info.attempt
            if let fallback, lookup.mayServeStale(fallback, after: error, now: Date()),
               var served = try await serve(fallback, as: .stale, lookup: lookup, request: lookup.request, info: lastAttempt, options: options,
                                             cache: cache, sink: sink, started: started, hiddenError: error) {
                served.attempts = error.attempts ?? served.attempts
                return served
            }
            cache.didServe(nil, as: .miss)
            throw error
        }
        guard let notModified = caching.notModified, let entry = revalidating else {
            cache.didServe(nil, as: .miss)
            return response
        }
        // A 304: freshen the stored response (RFC 9111 §4.3.4) and answer from it.
        guard let freshened = lookup.freshen(entry, with: notModified, requestTime: caching.requestTime, responseTime: caching.responseTime) else {
            // The 304 is not about the response we hold (other validators): ask again without conditions.
            return try await fetch(initial, lookup: lookup, revalidating: nil, fallback: fallback, id: id, info: info, options: options,
                                   cache: cache, sink: sink, started: started)
        }
        await cache.update(freshened)
        guard var served = try await serve(freshened, as: .revalidated, lookup: lookup, request: response.request, info: info, options: options, cache: cache,
                                           sink: sink, started: started, reportsMetrics: false) else {
            // The stored body vanished between the lookup and now: fetch it whole.
            return try await fetch(initial, lookup: lookup, revalidating: nil, fallback: nil, id: id, info: info, options: options,
                                   cache: cache, sink: sink, started: started)
        }
        served.attempts = response.attempts
        return served
    }

    /// Streams a stored response into `sink`. Returns nil when it can't be served after all (its
    /// body went missing or no longer passes the route's validation); nothing was then committed.
    private func serve(_ entry: CachedResponse, as use: RequestMetrics.CacheUse, freshness: CacheFreshness? = nil, lookup: CacheLookup,
                       request: BuiltRequest, info: RequestInfo, options: RequestOptions, cache: any ResponseCache, sink: some ResponseSink,
                       started: ContinuousClock.Instant, hiddenError: FetchError? = nil, reportsMetrics: Bool = true) async throws -> Response? {
        let head = lookup.servedHead(entry, freshness: freshness, now: Date())
        if !sink.handles(status: head.status), options.validator.validate(head, for: request, url: info.url) != nil { return nil }
        do {
            _ = try await sink.prepare(request, attempt: info.attempt)
            var bytes: Int64 = 0
            // Into a `save:`, the stored body is linked into place where the store can (no file
            // opened, no byte written), else copied in the kernel; otherwise chunk by chunk.
            let staged = sink as? any StagedFileSink
            if let target = staged?.linkTarget, try await cache.linkBody(of: entry, to: target.destination, staging: target.staging) {
                bytes = entry.bodySize
            } else {
                try sink.open(head)
                if let file = staged?.stagedFile, try await cache.copyBody(of: entry, descriptor: file.descriptor) {
                    bytes = entry.bodySize
                } else {
                    try await cache.readBody(of: entry) { chunk in
                        bytes += Int64(chunk.readableBytes)
                        try sink.write(chunk)
                    }
                }
                try await sink.finish()
            }
            cache.didServe(entry, as: use)
            if reportsMetrics {
                eventMonitor.request(info, didGatherMetrics: RequestMetrics(status: head.status, bytes: bytes, duration: .now - started, cache: use,
                                                                            hiddenError: hiddenError))
            }
            if reportsMetrics, hiddenError == nil { eventMonitor.requestDidFinish(info, error: nil) }
            return Response(request: request, head: head, bytes: bytes, attempts: 0, duration: .now - started, cache: use, hiddenError: hiddenError)
        } catch is CacheMiss {
            await sink.abandon()
            return nil
        } catch {
            await sink.abandon()
            throw fetchError(error, url: request.url)
        }
    }

    private func notCached(_ request: BuiltRequest, info: RequestInfo, policy: CacheOptions.Policy, cache: any ResponseCache) -> FetchError {
        cache.didServe(nil, as: .miss)  // a lookup that found nothing: it counts against the hit ratio
        let why = policy == .returnCacheDontLoad ? "the cache policy (or --offline) allows no request" : "the request says only-if-cached"
        var error = FetchError(.notCached, "nothing stored for this request and \(why)", url: info.url)
        error.attempts = 0
        eventMonitor.requestDidFinish(info, error: error)
        return error
    }

    /// RFC 9111 §4.4: a successful unsafe request invalidates the stored responses for its target
    /// URL and for a same-origin `Location` or `Content-Location` of its response. After a redirect
    /// (a 303 to the created resource, say) the final response is another request's: only the
    /// target is invalidated, and the final URL too.
    private func invalidate(target: URL, after response: Response, cache: any ResponseCache) async {
        await cache.invalidate(url: CacheKey.canonicalURL(target))
        guard response.request.url == target else {
            await cache.invalidate(url: CacheKey.canonicalURL(response.request.url))
            return
        }
        for name in ["Location", "Content-Location"] {
            guard let value = response.head.headers[name], let url = URL(string: value, relativeTo: target)?.absoluteURL,
                  CacheKey.sameOrigin(url, target) else { continue }
            await cache.invalidate(url: CacheKey.canonicalURL(url))
        }
    }
}

extension HTTPMethod {
    /// RFC 9110 §9.2.1 safe methods (QUERY is safe too).
    var isSafe: Bool { [.get, .head, .options, .trace, .query].contains(self) }
}
