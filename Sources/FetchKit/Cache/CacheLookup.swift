import Crypto
import Foundation

/// One request's dealings with the response cache: which stored response it selects (method,
/// canonical URL, `Vary`), what the policy and RFC 9111 let the session do with it, and what is
/// stored from the response. The rules themselves are `CacheRules`; this applies them to a
/// request and its `RequestCacheOptions`.
///
/// A class: the session's steps and the caching sink each keep the lookup, and as a struct every
/// hand-over copied its request and options (25 retains and releases a request).
final class CacheLookup: Sendable {
    /// The request as the cache sees it: as built, with the session's default headers.
    let request: BuiltRequest
    let options: RequestCacheOptions
    /// The request's `Cache-Control` (and `Pragma: no-cache`).
    let control: CacheControl
    /// `CacheKey.canonicalURL` of the request's URL.
    let url: String
    /// The session decodes `gzip`/`deflate` bodies before the sink: the stored body is the decoded one.
    let decodesContent: Bool

    /// For `initial` as the session will send it: with its default headers (`User-Agent`, and
    /// `Accept-Encoding` when bodies are decoded), which `Vary` may name.
    init(sending initial: BuiltRequest, options requestOptions: RequestOptions, cache options: RequestCacheOptions) {
        var request = initial
        Session.addDefaultHeaders(&request, options: requestOptions)
        self.request = request
        self.options = options
        decodesContent = requestOptions.decodesContent
        control = CacheControl(request: request.headers)
        url = CacheKey.canonicalURL(request.url)
    }

    enum Decision {
        /// Answer from the store without sending anything (with its freshness when the decision
        /// computed it, so serving doesn't compute it again).
        case serve(CachedResponse, CacheFreshness?)
        /// The policy forbids the network and nothing is stored.
        case notCached
        /// Send the request, conditionally when `revalidating` is set; `fallback` may stand in if it fails.
        case fetch(revalidating: CachedResponse?, fallback: CachedResponse?)
    }

    /// `--offline`, `return_cache_dont_load` or a request's `only-if-cached`.
    var forbidsNetwork: Bool { options.policy == .returnCacheDontLoad || control.onlyIfCached }

    /// A request that carries its own conditions is the caller's business: the cache neither answers
    /// it nor adds its own, so a `304` reaches the caller as sent.
    var hasOwnConditions: Bool {
        var found = false
        request.headers.forEachField { name, _ in
            if !found, Self.isCondition(name) { found = true }
        }
        return found
    }

    /// `If-None-Match`, `If-Modified-Since`, `If-Match`, `If-Unmodified-Since`, `If-Range` or
    /// `Range`, compared by length first: every request without a stored response asks.
    static func isCondition(_ name: String) -> Bool {
        let same = HTTPHeaders.sameName
        switch name.utf8.count {
        case 5: return same(name, "Range")
        case 8: return same(name, "If-Match") || same(name, "If-Range")
        case 13: return same(name, "If-None-Match")
        case 17: return same(name, "If-Modified-Since")
        case 19: return same(name, "If-Unmodified-Since")
        default: return false
        }
    }

    /// The newest stored response whose `Vary` selects this request (§4.1).
    func storedResponse(in cache: any ResponseCache) async -> CachedResponse? {
        guard !hasOwnConditions else { return nil }
        return await cache.entries(method: request.method, url: url).first(where: selects)
    }

    func selects(_ entry: CachedResponse) -> Bool {
        guard let names = entry.varyNames, !names.isEmpty else { return entry.varyKey.isEmpty }
        return varyKey(names) == entry.varyKey
    }

    /// A digest of the request's values of `names`: what the store keeps instead of the values
    /// themselves (a `Vary: Authorization` must not write a token to disk).
    func varyKey(_ names: [String]) -> String {
        guard !names.isEmpty else { return "" }
        return Hex.string(SHA256.hash(data: Data(CacheRules.varySignature(names: names, request: request.headers).utf8)))
    }

    func decision(for stored: CachedResponse?, now: Date) -> Decision {
        if forbidsNetwork { return stored.map { .serve($0, nil) } ?? .notCached }
        guard let stored else { return .fetch(revalidating: nil, fallback: nil) }
        switch options.policy {
        case .reload:
            return .fetch(revalidating: nil, fallback: nil)
        case .returnCacheElseLoad, .returnCacheDontLoad:
            return .serve(stored, nil)
        case .protocol:
            let freshness = freshness(of: stored)
            switch CacheRules.reuse(freshness, request: control, now: now) {
            case .fresh, .staleAllowed:
                return .serve(stored, freshness)
            case .revalidate:
                return .fetch(revalidating: CacheRules.hasValidator(stored.headers) ? stored : nil, fallback: stored)
            }
        }
    }

    func freshness(of entry: CachedResponse) -> CacheFreshness {
        CacheFreshness(status: entry.status, headers: entry.headers, requestTime: entry.requestTime, responseTime: entry.responseTime,
                       heuristic: options.heuristic, ttl: entry.ttl, invalidated: entry.invalidated)
    }

    /// `If-None-Match` / `If-Modified-Since` from the stored response's validators (§4.3.1).
    func addConditions(from entry: CachedResponse, to request: inout BuiltRequest) {
        for header in CacheRules.conditionalHeaders(for: entry.headers) { request.headers.update(name: header.name, value: header.value) }
    }

    /// Whether `entry` may stand in for a request that failed with `error` (RFC 5861 `stale-if-error`
    /// and the route's `stale_if_error`): only for failures of the origin or the network — a
    /// timeout, a connection, DNS or TLS handshake failure, a truncated body, a 5xx status — never
    /// for a validation failure or cancellation, and never under `reload`.
    func mayServeStale(_ entry: CachedResponse, after error: FetchError, now: Date) -> Bool {
        guard options.policy == .protocol || options.policy == .returnCacheElseLoad, Self.isOriginFailure(error) else { return false }
        return CacheRules.mayServeStaleOnError(freshness(of: entry), request: control, window: options.staleIfError?.seconds, now: now)
    }

    static func isOriginFailure(_ error: FetchError) -> Bool {
        switch error.code {
        case .timeout, .connection, .dns, .tlsHandshake, .truncated, .proxy: return true
        case .status: return (500...599).contains(error.status ?? 0)
        default: return false
        }
    }

    /// The stored response after a matching `304` (§4.3.4), its headers updated (§3.2) and its times
    /// those of this exchange; nil when the `304` does not identify it.
    func freshen(_ entry: CachedResponse, with notModified: TransportResponseHead, requestTime: Date, responseTime: Date) -> CachedResponse? {
        guard CacheRules.notModifiedMatches(stored: entry.headers, notModified: notModified.headers) else { return nil }
        var updated = entry
        updated.headers = CacheRules.updatedHeaders(stored: entry.headers, from: notModified.headers)
        if updated.headers["Date"] == nil { updated.headers.add(name: "Date", value: HTTPDate.format(responseTime)) }
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        updated.invalidated = false
        // The behaviour may refuse it now (`do_not_cache`): it is then served once and marked stale.
        guard var kept = options.handler.response(toCache: updated, for: request) else {
            updated.invalidated = true
            return updated
        }
        kept.id = entry.id
        kept.storageName = entry.storageName
        return kept
    }

    /// A stored response as it is served: its headers with the `Age` it has now (§4, §5.1).
    func servedHead(_ entry: CachedResponse, freshness known: CacheFreshness? = nil, now: Date) -> TransportResponseHead {
        let age = (known ?? freshness(of: entry)).currentAge(now: now)
        return TransportResponseHead(status: entry.status, headers: CacheRules.headersWithAge(entry.headers, age: age),
                                     expectedLength: entry.bodySize)
    }

    // MARK: - Storing

    /// Whether the response to `sent` (the request as adapted) may be stored: RFC 9111 §3, no
    /// `Vary: *`, the behaviour allows it, and credentials only when the route said so. Returns
    /// the request header names the response varies on (for `entryToStore`), nil to store nothing.
    func mayStore(_ head: TransportResponseHead, sent: BuiltRequest) -> [String]? {
        if options.handler.storesNothing { return nil }
        let fields = CacheRules.ResponseFields(head.headers)
        guard CacheRules.isStorable(method: sent.method, status: head.status, requestHeaders: sent.headers, responseHeaders: head.headers, fields: fields),
              let names = CacheRules.varyNames(head.headers, fields: fields) else { return nil }
        let authenticated = options.authenticated || sent.headers["Authorization"] != nil
        return !authenticated || options.storesAuthenticated ? names : nil
    }

    /// The entry to store for a response whose body (`bodySize` bytes, after decoding) was copied,
    /// after the behaviour (`ResponseCacher`) had its say; nil to store nothing.
    func entryToStore(_ head: TransportResponseHead, sent: BuiltRequest, varyNames names: [String], requestTime: Date, responseTime: Date,
                      bodySize: Int64) -> CachedResponse? {
        var headers = CacheRules.storedHeaders(from: head.headers, receivedAt: responseTime)
        // The stored body is what the sink got: decoded, so it no longer has the encoding or its length.
        if decodesContent, let encoding = headers["Content-Encoding"], ContentDecoder.decodes(encoding) {
            headers.remove(name: "Content-Encoding")
            headers.remove(name: "Content-Length")
            headers.add(name: "Content-Length", value: String(bodySize))
        }
        let entry = CachedResponse(method: request.method, url: url, status: head.status, headers: headers, requestTime: requestTime,
                                   responseTime: responseTime, varyNames: names.isEmpty ? nil : names, varyKey: varyKey(names),
                                   bodySize: bodySize)
        return options.handler.response(toCache: entry, for: sent)
    }

    /// A `200` to a `HEAD` updates the stored `GET` response it describes, or marks it stale (§4.3.5).
    func headDidArrive(_ head: TransportResponseHead, cache: any ResponseCache) async {
        guard (200...299).contains(head.status) else { return }
        // A stored body that was decoded has its decoded length: the HEAD's encoded one says nothing.
        var headHeaders = head.headers
        if headHeaders["Content-Encoding"] != nil { headHeaders.remove(name: "Content-Length") }
        for var entry in await cache.entries(method: .get, url: url) where selects(entry) {
            switch CacheRules.headResponse(headHeaders, updates: entry.headers, storedBodySize: entry.bodySize) {
            case .update(let headers):
                entry.headers = headers
                entry.requestTime = Date()
                entry.responseTime = entry.requestTime
                entry.invalidated = false
            case .invalidate:
                entry.invalidated = true
            }
            await cache.update(entry)
        }
    }
}
