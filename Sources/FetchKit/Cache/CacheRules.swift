import Foundation

/// How fresh a stored response is (RFC 9111 §4.2), computed once from what was stored (status,
/// headers, and the times its request was sent and its response received) and then asked about
/// any instant. Pure: the clock is always a parameter.
public struct CacheFreshness: Sendable, Equatable {
    /// The stored response's directives.
    public let cacheControl: CacheControl
    /// How long the response is fresh after it was generated (RFC 9111 §4.2.1).
    public let freshnessLifetime: TimeInterval
    /// The lifetime is a guess from `Last-Modified` (RFC 9111 §4.2.2).
    public let isHeuristic: Bool
    /// The lifetime is the configured `ttl` (`behavior: {modify: {ttl}}`).
    public let isOverridden: Bool
    /// The freshness information was invalid (bad or contradicting `max-age` or `Expires` lines):
    /// the lifetime is 0, so the response is stale (§4.2.1).
    public let hasInvalidFreshness: Bool
    /// A `HEAD` showed the stored response is out of date (§4.3.5): it is stale whatever its age.
    public let invalidated: Bool
    /// The response's age when it was received (§4.2.3 `corrected_initial_age`).
    public let correctedInitialAge: TimeInterval
    /// When the response was received (§4.2.3 `response_time`).
    public let responseTime: Date

    /// Status codes whose responses may be given heuristic freshness (RFC 9110 §15.1).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]
    /// The cap on a heuristic lifetime: RFC 7234 §4.2.2 made a cache warn (Warning 113) past 24
    /// hours; RFC 9111 dropped Warning, the cap stays so a guess never outlives a day.
    static let heuristicCap: TimeInterval = 86_400

    /// - Parameters:
    ///   - requestTime: when the request that got the response was sent (§4.2.3 `request_time`).
    ///   - responseTime: when the response was received (§4.2.3 `response_time`).
    ///   - heuristic: allow heuristic freshness (`cache.heuristic`, off by default).
    ///   - ttl: a configured lifetime that replaces the response's own freshness information:
    ///     `max-age`, `Expires`, a heuristic, and the response's `no-cache` (see
    ///     `CacheRules.reuse`); `must-revalidate` still keeps a stale response from being served.
    ///   - invalidated: a `HEAD` made the stored response stale (§4.3.5).
    public init(status: Int, headers: HTTPHeaders, requestTime: Date, responseTime: Date, heuristic: Bool = false,
                ttl: TimeInterval? = nil, invalidated: Bool = false) {
        let cacheControl = CacheControl(headers)
        self.cacheControl = cacheControl
        self.invalidated = invalidated
        self.responseTime = responseTime
        // RFC 9110 §6.6.1: without a (valid) Date, the time the response was received stands in.
        let date = headers.value(for: "Date").flatMap(HTTPDate.parse) ?? responseTime
        let lifetime = Self.lifetime(status: status, headers: headers, cacheControl: cacheControl, date: date, heuristic: heuristic)
        hasInvalidFreshness = lifetime.invalid
        isHeuristic = ttl == nil && lifetime.heuristic
        isOverridden = ttl != nil
        freshnessLifetime = ttl.map { max(0, $0) } ?? lifetime.seconds
        // §4.2.3, with the Age field read per §5.1.
        let apparentAge = max(0, responseTime.timeIntervalSince(date))
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let correctedAgeValue = (CacheRules.ageValue(headers) ?? 0) + responseDelay
        correctedInitialAge = max(apparentAge, correctedAgeValue)
    }

    /// §4.2.1, in order: `max-age` (`s-maxage` is for shared caches), else `Expires` − `Date`,
    /// else a heuristic when allowed, else 0. An `Expires` that is not a valid HTTP-date (such as
    /// `0`) means already expired (§5.3); several `Expires` lines that disagree make the response
    /// stale (§4.2.1). A lifetime never goes below 0: an `Expires` before `Date` is expired on
    /// arrival, and its staleness counts from then.
    private static func lifetime(status: Int, headers: HTTPHeaders, cacheControl: CacheControl, date: Date,
                                 heuristic: Bool) -> (seconds: TimeInterval, heuristic: Bool, invalid: Bool) {
        if let maxAge = cacheControl.maxAge { return (maxAge, false, cacheControl.hasInvalidFreshness) }
        let expires = headers.values(for: "Expires").map { $0.trimmingCharacters(in: .whitespaces) }
        if let first = expires.first {
            guard expires.allSatisfy({ $0 == first }) else { return (0, false, true) }
            guard let expiry = HTTPDate.parse(first) else { return (0, false, false) }
            return (max(0, expiry.timeIntervalSince(date)), false, false)
        }
        // §4.2.2: only without explicit freshness, for a heuristically cacheable status or `public`.
        if heuristic, heuristicallyCacheable.contains(status) || cacheControl.isPublic,
           let lastModified = headers.value(for: "Last-Modified").flatMap(HTTPDate.parse) {
            return (min(heuristicCap, max(0, date.timeIntervalSince(lastModified) / 10)), true, false)
        }
        return (0, false, false)
    }

    /// The response's age at `now` (§4.2.3): `corrected_initial_age + resident_time`. A clock that
    /// went back before `responseTime` counts as no time in the cache.
    public func currentAge(now: Date) -> TimeInterval {
        correctedInitialAge + max(0, now.timeIntervalSince(responseTime))
    }

    /// Whether the response is fresh at `now`: `freshness_lifetime > current_age` (§4.2).
    public func isFresh(now: Date) -> Bool {
        !invalidated && freshnessLifetime > currentAge(now: now)
    }

    /// How long the response has been stale at `now` (0 while fresh, §4.2.4).
    public func staleness(now: Date) -> TimeInterval {
        max(0, currentAge(now: now) - freshnessLifetime)
    }

    /// How long the response stays fresh after `now` (negative once stale).
    public func remainingFreshness(now: Date) -> TimeInterval {
        freshnessLifetime - currentAge(now: now)
    }
}

/// What the `protocol` policy may do with a stored response for a new request (RFC 9111 §4).
public enum CacheReuse: Sendable, Equatable {
    /// Serve it without contacting the origin: it is fresh enough for the request (§4.2).
    case fresh
    /// Serve it without contacting the origin although it is stale: the request's `max-stale`
    /// allows that much staleness and the response does not forbid it (§4.2.4).
    case staleAllowed
    /// Send a conditional request first (§4.3).
    case revalidate
}

/// RFC 9111 (and RFC 5861 `stale-if-error`) for a private cache, as pure functions: what may be
/// stored, when it may be reused, how it is validated and freshened, and which request headers
/// select it. The store and the session supply the I/O.
public enum CacheRules {
    /// Status codes this cache understands for `must-understand` (§5.2.2.3): those RFC 9110 defines.
    static let understoodStatuses: Set<Int> = Set(200...206).union(300...308).union(400...417).union(421...429)
        .union([431, 451]).union(500...505).union([511])

    /// Fields never stored and never taken from a `304` or `HEAD` (§3.1, §3.2): hop-by-hop fields
    /// (RFC 9110 §7.6.1), the proxy ones, and `Set-Cookie` (a login must never be replayed).
    static let unstorable: [String] = ["connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
                                          "trailer", "proxy-authenticate", "proxy-authentication-info", "proxy-authorization",
                                       "set-cookie", "set-cookie2"]

    /// `name` is one of `unstorable`, compared without case and without allocating, and only with
    /// the names of its length (every field of every stored response is asked; a test checks
    /// this against `unstorable`).
    static func isUnstorable(_ name: String) -> Bool {
        let same = HTTPHeaders.sameName
        switch name.utf8.count {
        case 2: return same(name, "te")
        case 7: return same(name, "upgrade") || same(name, "trailer")
        case 10: return same(name, "connection") || same(name, "keep-alive") || same(name, "set-cookie")
        case 11: return same(name, "set-cookie2")
        case 16: return same(name, "proxy-connection")
        case 17: return same(name, "transfer-encoding")
        case 18: return same(name, "proxy-authenticate")
        case 19: return same(name, "proxy-authorization")
        case 25: return same(name, "proxy-authentication-info")
        default: return false
        }
    }

    /// Fields a `304` or `HEAD` never updates (§3.2): they describe the stored body as it was
    /// received and stored, which the new response did not carry.
    static let bodyDescribing: Set<String> = ["content-length", "content-encoding", "content-range"]

    /// The headers served from the cache: the stored ones with `Age` replaced by `age` in whole
    /// seconds, rounded down, at most 2^31 (§4: a cache MUST generate `Age` for a stored response;
    /// §5.1).
    public static func headersWithAge(_ stored: HTTPHeaders, age: TimeInterval) -> HTTPHeaders {
        var headers = stored
        headers.remove(name: "Age")
        let seconds = Int64(min(CacheControl.maxDeltaSeconds, max(0, age.isFinite ? age : CacheControl.maxDeltaSeconds).rounded(.down)))
        headers.add(name: "Age", value: String(seconds))
        return headers
    }

    // MARK: Reusing (§4, §4.2.4, RFC 5861)

    /// What the `protocol` policy may do with `stored` for a request with directives `request`
    /// (`CacheControl(request:)`) at `now`. In order, the most restrictive first:
    /// a `HEAD`-invalidated response, request `no-cache` (§5.2.1.4) or response `no-cache`
    /// (§5.2.2.4, unless a `ttl` replaced the response's freshness) → revalidate; an age above
    /// the request's `max-age` (§5.2.1.1) → revalidate; fresh, and fresh for at least the
    /// request's `min-fresh` more (§5.2.1.3) → fresh (`immutable`, RFC 8246, changes nothing: it
    /// only spares revalidating a fresh response on reload); stale: `must-revalidate` (§5.2.2.2)
    /// or a `min-fresh` → revalidate, staleness within the request's `max-stale` (§5.2.1.2) →
    /// stale allowed, else revalidate. Invalid freshness information gives lifetime 0, so stale.
    ///
    /// The request's `no-store` only forbids storing the response (§5.2.1.5: a stored response
    /// may still answer it) and `only-if-cached` (§5.2.1.7) is the caller's: read both on
    /// `request`.
    public static func reuse(_ stored: CacheFreshness, request: CacheControl, now: Date) -> CacheReuse {
        if stored.invalidated || request.noCache { return .revalidate }
        if stored.cacheControl.noCache && !stored.isOverridden { return .revalidate }
        let age = stored.currentAge(now: now)
        if let maxAge = request.maxAge, age > maxAge { return .revalidate }
        let remaining = stored.freshnessLifetime - age
        if remaining > 0 {
            return remaining >= (request.minFresh ?? 0) ? .fresh : .revalidate
        }
        if stored.cacheControl.mustRevalidate || (request.minFresh ?? 0) > 0 { return .revalidate }
        if let maxStale = request.maxStale, -remaining <= maxStale { return .staleAllowed }
        return .revalidate
    }

    /// Whether `stored` may stand in for a failed request (the caller decides what failed: RFC
    /// 5861 §4 names 500, 502, 503 and 504 and transport errors are the same case). A fresh
    /// response may; a stale one when its staleness is within the largest of `window` (the
    /// route's `stale_if_error`), the response's `stale-if-error` and the request's: RFC 5861 §4
    /// gives each its own scope (the response's covers every request, the request's its own), so
    /// either one allows the stale response and neither narrows the other. Never when the response
    /// says `no-cache` (it MUST NOT be used without successful validation, RFC 9111 §5.2.2.4,
    /// unless a `ttl` replaced that) or, once stale, `must-revalidate` (§5.2.2.2, §4.2.4: a cache
    /// MUST NOT generate a stale response a directive prohibits).
    public static func mayServeStaleOnError(_ stored: CacheFreshness, request: CacheControl, window: TimeInterval?, now: Date) -> Bool {
        if stored.cacheControl.noCache && !stored.isOverridden { return false }
        if stored.isFresh(now: now) { return true }
        if stored.cacheControl.mustRevalidate { return false }
        guard let limit = [window, stored.cacheControl.staleIfError, request.staleIfError].compactMap({ $0 }).max() else { return false }
        return stored.staleness(now: now) <= limit
    }

    // MARK: Validating (§4.3)

    /// Whether a response carries a validator: an `ETag`, or a `Last-Modified` that is an HTTP-date.
    public static func hasValidator(_ headers: HTTPHeaders) -> Bool {
        entityTag(headers) != nil || headers.value(for: "Last-Modified").flatMap(HTTPDate.parse) != nil
    }

    /// The conditional fields for revalidating `stored` (§4.3.1): `If-None-Match` with its
    /// `ETag` (weak or strong: `If-None-Match` compares weakly, RFC 9110 §13.1.2) and
    /// `If-Modified-Since` with its `Last-Modified` when that is a valid date — never a date made
    /// up from `Date` or the clock. Empty when the stored response has no validator.
    public static func conditionalHeaders(for stored: HTTPHeaders) -> HTTPHeaders {
        var headers = HTTPHeaders()
        if let tag = entityTag(stored) { headers.add(name: "If-None-Match", value: tag.text) }
        if let lastModified = stored.value(for: "Last-Modified")?.trimmingCharacters(in: .whitespaces),
           HTTPDate.parse(lastModified) != nil {
            headers.add(name: "If-Modified-Since", value: lastModified)
        }
        return headers
    }

    /// Whether a `304` identifies the single stored response being revalidated (§4.3.4): a
    /// strong `ETag` in the `304` must equal the stored one by strong comparison (RFC 9110
    /// §8.8.3.2), a weak one by weak comparison; without an `ETag`, its `Last-Modified` must equal
    /// the stored one; a `304` with no validator matches only a stored response with none. When
    /// this is false the `304` must not update the entry: fetch again without conditions.
    public static func notModifiedMatches(stored: HTTPHeaders, notModified: HTTPHeaders) -> Bool {
        if let tag = entityTag(notModified) {
            guard let storedTag = entityTag(stored) else { return false }
            return tag.isWeak ? tag.opaque == storedTag.opaque : tag == storedTag
        }
        if let lastModified = notModified.value(for: "Last-Modified") {
            return sameDate(lastModified, stored.value(for: "Last-Modified"))
        }
        return !hasValidator(stored)
    }

    /// The stored headers after a `304` or `HEAD` `response` freshened them (§3.2): every field of
    /// `response` replaces all stored lines of its name, except the unstorable ones (§3.1 and
    /// `strip`) and `Content-Length`, `Content-Encoding` and `Content-Range`, which describe the
    /// stored body. `Date` and `Age` always come from `response` (removed when it has none):
    /// with the entry's request and response times set to this exchange's, the stored ones would
    /// date it wrongly (§4.2.3).
    public static func updatedHeaders(stored: HTTPHeaders, from response: HTTPHeaders, strip: [String] = []) -> HTTPHeaders {
        let excluded = Set(unstorable).union(bodyDescribing).union(connectionNames(response)).union(strip.map { $0.lowercased() })
        let replaced = Set(response.map { $0.name.lowercased() }).subtracting(excluded).union(["date", "age"])
        var headers = HTTPHeaders()
        for field in stored where !replaced.contains(field.name.lowercased()) {
            headers.add(name: field.name, value: field.value)
        }
        for field in response where !excluded.contains(field.name.lowercased()) {
            headers.add(name: field.name, value: field.value)
        }
        return headers
    }

    /// What a `200` response to a `HEAD` does to a stored `GET` response (§4.3.5).
    public enum HeadUpdate: Sendable, Equatable {
        /// The validators match: store these headers (and the `HEAD`'s times).
        case update(HTTPHeaders)
        /// They don't: the stored response is stale from now on (`CachedResponse.invalidated`).
        case invalidate
    }

    /// §4.3.5: the stored response is updated when every validator the `HEAD` response carries
    /// matches it — an `ETag` identical to the stored one (a stored `ETag` the `HEAD` lacks does
    /// not match), a `Last-Modified` equal to the stored one — and it carries at least one, and a
    /// `Content-Length` in the `HEAD` equals the stored one (or `storedBodySize` when the stored
    /// response has none). Anything else invalidates it.
    public static func headResponse(_ head: HTTPHeaders, updates stored: HTTPHeaders, storedBodySize: Int64? = nil) -> HeadUpdate {
        let headTag = entityTag(head), storedTag = entityTag(stored)
        let headLastModified = head.value(for: "Last-Modified")
        guard headTag != nil || headLastModified != nil, headTag == storedTag else { return .invalidate }
        if let headLastModified, !sameDate(headLastModified, stored.value(for: "Last-Modified")) { return .invalidate }
        if let length = head.value(for: "Content-Length").flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) }),
           let storedLength = stored.value(for: "Content-Length").flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) }) ?? storedBodySize,
           length != storedLength {
            return .invalidate
        }
        return .update(updatedHeaders(stored: stored, from: head))
    }

    // MARK: Selecting (§4.1)

    /// The request fields a response varies on (§4.1): the members of every `Vary` line,
    /// lowercased, deduplicated and sorted; `[]` without `Vary`; nil for `Vary: *`, which no
    /// request matches.
    public static func varyNames(_ response: HTTPHeaders) -> [String]? {
        varyNames(response, fields: ResponseFields(response))
    }

    /// `varyNames`, with the response's `fields` known: nothing to read without `Vary`.
    static func varyNames(_ response: HTTPHeaders, fields: ResponseFields) -> [String]? {
        guard fields.vary else { return [] }
        var names = Set<String>()
        for value in response.values(for: "Vary") {
            for member in splitList(value) {
                if member == "*" { return nil }
                names.insert(member.lowercased())
            }
        }
        return names.sorted()
    }

    /// A request's value for `name`, normalized for comparing (§4.1 allows combining field lines
    /// and removing whitespace around list members): every line's members, trimmed, joined by
    /// ", ". Nil when the request has no such field: a field absent from both requests matches,
    /// absent from one only does not, and present-but-empty is "".
    public static func normalizedValue(of name: String, in request: HTTPHeaders) -> String? {
        let lines = request.filter { HTTPHeaders.sameName($0.name, name) }
        guard !lines.isEmpty else { return nil }
        return lines.flatMap { splitList($0.value) }.joined(separator: ", ")
    }

    /// A stable text naming the variant a request selects, for storing next to the entry: one line
    /// per name (sorted), `name=value` when the request has the field and `name` alone when it
    /// does not. Two requests select the same stored response when their signatures are equal.
    public static func varySignature(names: [String], request: HTTPHeaders) -> String {
        Set(names.map { $0.lowercased() }).sorted().map { name in
            normalizedValue(of: name, in: request).map { "\(name)=\($0)" } ?? name
        }.joined(separator: "\n")
    }

    // MARK: Helpers

    /// The `Age` field (§5.1): the first member of the first line, ignored (nil) unless it is
    /// delta-seconds.
    static func ageValue(_ headers: HTTPHeaders) -> TimeInterval? {
        guard let value = headers.value(for: "Age") else { return nil }
        let first = value.split(separator: ",", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return CacheControl.deltaSeconds(first.trimmingCharacters(in: .whitespaces))
    }

    /// An entity tag (RFC 9110 §8.8.3): `W/` (case-sensitive) marks a weak one.
    struct EntityTag: Equatable {
        var isWeak: Bool
        var opaque: String
        var text: String { isWeak ? "W/" + opaque : opaque }
    }

    static func entityTag(_ headers: HTTPHeaders) -> EntityTag? {
        guard let value = headers.value(for: "ETag")?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value.hasPrefix("W/") ? EntityTag(isWeak: true, opaque: String(value.dropFirst(2))) : EntityTag(isWeak: false, opaque: value)
    }

    /// Two `Last-Modified` values name the same instant (as text when either is not a date).
    static func sameDate(_ a: String, _ b: String?) -> Bool {
        guard let b else { return false }
        if let x = HTTPDate.parse(a), let y = HTTPDate.parse(b) { return x == y }
        return a.trimmingCharacters(in: .whitespaces) == b.trimmingCharacters(in: .whitespaces)
    }

    /// The members of a list field value (RFC 9110 §5.6.1): split at commas outside
    /// quoted-strings, trimmed, empty members dropped.
    static func splitList(_ value: String) -> [String] {
        // Over UTF-8 bytes: the delimiters are ASCII, and a byte of a multi-byte character is never one.
        var members: [String] = []
        let bytes = Array(value.utf8)
        var start = 0, quoted = false, escaped = false
        func appendMember(_ end: Int) {
            var from = start, to = end
            while from < to, bytes[from] == UInt8(ascii: " ") || bytes[from] == UInt8(ascii: "\t") { from += 1 }
            while to > from, bytes[to - 1] == UInt8(ascii: " ") || bytes[to - 1] == UInt8(ascii: "\t") { to -= 1 }
            if from < to { members.append(String(decoding: bytes[from..<to], as: UTF8.self)) }
        }
        for (index, byte) in bytes.enumerated() {
            if escaped {
                escaped = false
            } else if quoted && byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                quoted.toggle()
            } else if byte == UInt8(ascii: ","), !quoted {
                appendMember(index)
                start = index + 1
            }
        }
        appendMember(bytes.count)
        return members
    }
}
