import Foundation

/// What may be stored (RFC 9111 §3) and what of a response is stored (§3.1): `CacheRules` for the
/// session's decisions before and after a response arrives, and for the store's header text.
extension CacheRules {
    /// Whether a response may be stored by a private cache (§3). Only `GET` and `HEAD`, a final
    /// status other than `206` and `304`; no `no-store` in the request (§5.2.1.5) or the response
    /// (§5.2.2.5), except that `must-understand` with an understood status overrides the
    /// response's `no-store` and with any other status forbids storing (§5.2.2.3); and one of:
    /// `max-age`, `Expires`, `public`, `private`, or a heuristically cacheable status (RFC 9110
    /// §15.1) — whether or not heuristic freshness is on: without it such a response has lifetime
    /// 0 and is revalidated, and it can still stand in when the origin fails. The Authorization
    /// rule and `Set-Cookie` are the caller's.
    public static func isStorable(method: HTTPMethod, status: Int, requestHeaders: HTTPHeaders, responseHeaders: HTTPHeaders) -> Bool {
        isStorable(method: method, status: status, requestHeaders: requestHeaders, responseHeaders: responseHeaders,
                   fields: ResponseFields(responseHeaders))
    }

    /// `isStorable`, with the response's `fields` known (`ResponseFields`).
    static func isStorable(method: HTTPMethod, status: Int, requestHeaders: HTTPHeaders, responseHeaders: HTTPHeaders,
                           fields: ResponseFields) -> Bool {
        guard method == .get || method == .head, status >= 200, status != 206, status != 304 else { return false }
        guard !CacheControl(request: requestHeaders).noStore else { return false }
        let response = fields.cacheControl ? CacheControl(responseHeaders) : CacheControl()
        if response.mustUnderstand {
            guard understoodStatuses.contains(status) else { return false }
        } else if response.noStore {
            return false
        }
        return response.maxAge != nil || fields.expires || response.isPublic || response.isPrivate
            || CacheFreshness.heuristicallyCacheable.contains(status)
    }

    /// Which of the fields that decide storing a response has, found in one pass over its fields
    /// rather than one pass for each (every response the cache sees is asked).
    struct ResponseFields {
        var cacheControl = false, expires = false, vary = false

        init(_ headers: HTTPHeaders) {
            let same = HTTPHeaders.sameName
            headers.forEachField { name, _ in
                switch name.utf8.count {
                case 13: if !cacheControl, same(name, "Cache-Control") { cacheControl = true }
                case 7: if !expires, same(name, "Expires") { expires = true }
                case 4: if !vary, same(name, "Vary") { vary = true }
                default: break
                }
            }
        }
    }

    /// The fields to store from a response (§3.1): all but hop-by-hop ones, those named by
    /// `Connection`, the proxy authentication ones, `Set-Cookie`/`Set-Cookie2`, and `strip`
    /// (`modify.strip_headers`). With `receivedAt`, a response without `Date` gets one (RFC 9110
    /// §6.6.1: a recipient that caches such a response appends the time it was received).
    public static func storedHeaders(from response: HTTPHeaders, strip: [String] = [], receivedAt: Date? = nil) -> HTTPHeaders {
        var stored = HTTPHeaders()
        stored.reserveCapacity(response.count + 1)
        let seen = forEachStoredField(of: response, strip: strip) { name, value in stored.add(name: name, value: value) }
        var hasDate = seen.date
        if seen.namedFields {
            let named = connectionNames(response)
            if !named.isEmpty {
                var kept = HTTPHeaders()
                kept.reserveCapacity(stored.count + 1)
                stored.forEachField { name, value in
                    if !named.contains(where: { HTTPHeaders.sameName($0, name) }) { kept.add(name: name, value: value) }
                }
                stored = kept
                hasDate = stored.contains(name: "Date")
            }
        }
        if let receivedAt, !hasDate {
            stored.add(name: "Date", value: HTTPDate.format(receivedAt))
        }
        return stored
    }

    /// Calls `body` with each field of `response` a cache may store, in order: all but the
    /// `unstorable` ones and `strip`, but those a `Connection` field names still included. Returns
    /// whether one of them was `Date`, and whether a `Connection` field named other fields (the
    /// caller then drops those: `connectionNames`). One pass, names compared in place without
    /// lowercased copies or sets: it runs for every response stored, and `Connection: keep-alive`
    /// (or `close`), as most servers send it, names no field.
    static func forEachStoredField(of response: HTTPHeaders, strip: [String] = [],
                                   _ body: (_ name: String, _ value: String) -> Void) -> (date: Bool, namedFields: Bool) {
        var date = false, namedFields = false
        response.forEachField { name, value in
            if isUnstorable(name) {
                if !namedFields, HTTPHeaders.sameName(name, "connection"), !HTTPHeaders.sameName(value, "keep-alive"),
                   !HTTPHeaders.sameName(value, "close") { namedFields = true }
                return
            }
            if !strip.isEmpty, strip.contains(where: { HTTPHeaders.sameName($0, name) }) { return }
            if !date, name.utf8.count == 4, HTTPHeaders.sameName(name, "date") { date = true }
            body(name, value)
        }
        return (date, namedFields)
    }

    /// `storedHeaders(from: response, receivedAt:)` as `SQLiteResponseCache` keeps it (`encode`:
    /// a `Name: value` line for each field), written straight from the response's fields: the
    /// field list `storedHeaders` makes was only ever encoded and dropped. Nil, for the caller to
    /// take that way instead, when a `Connection` field names other fields, or when
    /// `decodedContent` and the response has a `Content-Encoding` (the stored fields then describe
    /// the decoded body: `CacheLookup.entryToStore`).
    static func encodedStoredHeaders(from response: HTTPHeaders, receivedAt: Date, decodedContent: Bool) -> String? {
        // One pass, into a buffer on the stack: each pass over the fields retains and releases
        // every name and value once (atomically), and a size pass would double that. 1 KiB: the
        // most the standard library allocates on the stack without asking whether the thread's
        // stack has room (2 KiB went to `malloc` on every call).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1024) { buffer -> String? in
            var offset = 0, encoded = false, fits = true
            func line(_ name: String, _ value: String) {
                guard fits, offset + SQLiteResponseCache.encodedSize(name, value) <= buffer.count else { return fits = false }
                offset = SQLiteResponseCache.encode(name, value, into: buffer, at: offset)
            }
            let seen = forEachStoredField(of: response) { name, value in
                if decodedContent, !encoded, name.utf8.count == 16, HTTPHeaders.sameName(name, "content-encoding") { encoded = true }
                line(name, value)
            }
            if seen.namedFields || encoded { return nil }
            if !seen.date { line("Date", HTTPDate.format(receivedAt)) }
            // Larger than the buffer (rare): the field list's way.
            guard fits else { return SQLiteResponseCache.encode(storedHeaders(from: response, receivedAt: receivedAt)) }
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[..<offset]), as: UTF8.self)
        }
    }

    /// The field names listed by `Connection` (RFC 9110 §7.6.1), lowercased, less the connection
    /// options that name no field (`keep-alive`, `close`), which nearly every response carries.
    static func connectionNames(_ headers: HTTPHeaders) -> [String] {
        var names: [String] = []
        for value in headers.values(for: "Connection") {
            if HTTPHeaders.sameName(value, "keep-alive") || HTTPHeaders.sameName(value, "close") { continue }
            for member in splitList(value) {
                let name = member.lowercased()
                if name != "keep-alive", name != "close", !names.contains(name) { names.append(name) }
            }
        }
        return names
    }
}
