import Foundation
import Testing
@testable import FetchKit

/// What may be stored (RFC 9111 §3) and how it is stored and served (§3.1, §5.1).
@Suite struct CacheStorageTests {
    typealias F = CacheRuleFixture

    struct StorableCase: Sendable, CustomTestStringConvertible {
        let name: String
        var method: HTTPMethod = .get
        var status = 200
        var request: [HTTPHeaders.Header] = []
        var response: [HTTPHeaders.Header] = []
        let storable: Bool
        var testDescription: String { name }
    }

    static func h(_ pairs: (String, String)...) -> [HTTPHeaders.Header] { pairs.map { .init(name: $0.0, value: $0.1) } }

    static let storableCases: [StorableCase] = [
        StorableCase(name: "GET 200 without freshness (heuristically cacheable)", storable: true),
        StorableCase(name: "HEAD 200", method: .head, storable: true),
        StorableCase(name: "POST never", method: .post, response: h(("Cache-Control", "max-age=60")), storable: false),
        StorableCase(name: "PUT never", method: .put, response: h(("Cache-Control", "max-age=60")), storable: false),
        StorableCase(name: "206 never", status: 206, response: h(("Cache-Control", "max-age=60")), storable: false),
        StorableCase(name: "304 never", status: 304, response: h(("Cache-Control", "max-age=60")), storable: false),
        StorableCase(name: "1xx is not final", status: 103, response: h(("Cache-Control", "max-age=60")), storable: false),
        StorableCase(name: "302 without freshness", status: 302, storable: false),
        StorableCase(name: "302 with max-age", status: 302, response: h(("Cache-Control", "max-age=60")), storable: true),
        StorableCase(name: "302 with an invalid max-age (stored, stale)", status: 302, response: h(("Cache-Control", "max-age=x")), storable: true),
        StorableCase(name: "302 with Expires", status: 302, response: h(("Expires", "0")), storable: true),
        StorableCase(name: "302 with public", status: 302, response: h(("Cache-Control", "public")), storable: true),
        StorableCase(name: "302 with private", status: 302, response: h(("Cache-Control", "private")), storable: true),
        StorableCase(name: "302 with s-maxage only", status: 302, response: h(("Cache-Control", "s-maxage=60")), storable: false),
        StorableCase(name: "404 heuristically cacheable", status: 404, storable: true),
        StorableCase(name: "500 without freshness", status: 500, storable: false),
        StorableCase(name: "501 heuristically cacheable", status: 501, storable: true),
        StorableCase(name: "response no-store", response: h(("Cache-Control", "max-age=60, no-store")), storable: false),
        StorableCase(name: "response no-store on a second line", response: h(("Cache-Control", "max-age=60"), ("Cache-Control", "NO-STORE")), storable: false),
        StorableCase(name: "request no-store", request: h(("Cache-Control", "no-store")), response: h(("Cache-Control", "max-age=60")), storable: false),
        StorableCase(name: "response no-cache is stored (and revalidated)", response: h(("Cache-Control", "no-cache")), storable: true),
        StorableCase(name: "must-understand with an understood status overrides no-store",
                     response: h(("Cache-Control", "must-understand, no-store, max-age=60")), storable: true),
        StorableCase(name: "must-understand with an unknown status", status: 299,
                     response: h(("Cache-Control", "must-understand, max-age=60")), storable: false),
        StorableCase(name: "unknown status with max-age", status: 299, response: h(("Cache-Control", "max-age=60")), storable: true),
    ]

    @Test(arguments: storableCases)
    func storable(_ c: StorableCase) {
        var request = HTTPHeaders(), response = HTTPHeaders()
        for field in c.request { request.add(name: field.name, value: field.value) }
        for field in c.response { response.add(name: field.name, value: field.value) }
        #expect(CacheRules.isStorable(method: c.method, status: c.status, requestHeaders: request, responseHeaders: response) == c.storable)
    }

    @Test func storedHeadersDropHopByHopProxyAndCookies() {
        let response = F.fields([
            ("Date", F.date(0)), ("Content-Type", "text/plain"), ("Connection", "close, X-Hop"), ("connection", "x-other"),
            ("X-Hop", "1"), ("X-Other", "2"), ("Keep-Alive", "timeout=5"), ("Transfer-Encoding", "chunked"), ("TE", "trailers"),
            ("Trailer", "X-Sum"), ("Upgrade", "h2c"), ("Proxy-Connection", "keep-alive"), ("Proxy-Authenticate", "Basic"),
            ("Proxy-Authentication-Info", "x"), ("Proxy-Authorization", "y"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2"),
            ("Set-Cookie2", "c=3"), ("X-Secret", "s"), ("Link", "</a>"), ("Link", "</b>"),
        ])
        let stored = CacheRules.storedHeaders(from: response, strip: ["x-SECRET"])
        #expect(stored.map(\.name) == ["Date", "Content-Type", "Link", "Link"])
        #expect(F.values("Link", in: stored) == ["</a>", "</b>"])
    }

    /// The session's shortcut for a response stored unchanged writes the index's text straight
    /// from the response: it must be exactly what `storedHeaders` then `encode` make, or decline.
    @Test(arguments: [
        [("Server", "nginx"), ("Date", F.date(0)), ("Content-Length", "16384"), ("Connection", "keep-alive"), ("ETag", "\"a\""),
         ("Set-Cookie", "a=1"), ("Transfer-Encoding", "chunked"), ("Link", "</a>"), ("Link", "</b>"), ("X-Empty", "")],
        [("ETag", "\"a\""), ("connection", "Close"), ("Keep-Alive", "timeout=5"), ("Content-Encoding", "gzip")],
        [("DATE", F.date(3)), ("Vary", "Accept"), ("Cache-Control", "max-age=60"), ("Content-Type", "text/plain; charset=utf-8")],
        [],
        // Longer than the stack buffer the shortcut writes into: made the field list's way.
        [("ETag", "\"a\""), ("Link", String(repeating: "</page>; rel=next, ", count: 60)), ("Content-Type", "text/html")],
    ] as [[(String, String)]])
    func encodedStoredHeadersAreTheStoredHeadersEncoded(_ pairs: [(String, String)]) {
        let response = F.fields(pairs)
        let expected = SQLiteResponseCache.encode(CacheRules.storedHeaders(from: response, receivedAt: F.at(5)))
        #expect(CacheRules.encodedStoredHeaders(from: response, receivedAt: F.at(5), decodedContent: false) == expected)
    }

    @Test func encodedStoredHeadersDeclineWhatOnlyTheFieldListDoes() {
        // A `Connection` naming a field: that field goes too, which the list does.
        let named = F.fields([("Connection", "close, X-Hop"), ("X-Hop", "1"), ("ETag", "\"a\"")])
        #expect(CacheRules.encodedStoredHeaders(from: named, receivedAt: F.at(5), decodedContent: false) == nil)
        // A decoded body's stored fields lose its encoding (`CacheLookup.entryToStore`).
        let encoded = F.fields([("Content-Encoding", "gzip"), ("ETag", "\"a\"")])
        #expect(CacheRules.encodedStoredHeaders(from: encoded, receivedAt: F.at(5), decodedContent: true) == nil)
        #expect(CacheRules.encodedStoredHeaders(from: encoded, receivedAt: F.at(5), decodedContent: false) != nil)
    }

    @Test func theUnstorableNamesAreKnownInAnyCaseAndNothingElse() {
        for name in CacheRules.unstorable {
            #expect(CacheRules.isUnstorable(name), "\(name)")
            #expect(CacheRules.isUnstorable(name.uppercased()), "\(name)")
            #expect(!CacheRules.isUnstorable(name + "s"), "\(name)s")
            #expect(!CacheRules.isUnstorable(String(name.dropLast()) + "x"), "\(name)")
        }
        for name in ["Date", "ETag", "Cache-Control", "Content-Length", "Set-Cookie3", "t", ""] {
            #expect(!CacheRules.isUnstorable(name), "\(name)")
        }
    }

    @Test func storedHeadersGainDateOnlyWhenMissing() {
        let without = CacheRules.storedHeaders(from: F.fields([("ETag", "\"a\"")]), receivedAt: F.at(5))
        #expect(without.value(for: "Date") == F.date(5))
        let with = CacheRules.storedHeaders(from: F.fields([("Date", F.date(0))]), receivedAt: F.at(5))
        #expect(F.values("Date", in: with) == [F.date(0)])
        #expect(CacheRules.storedHeaders(from: F.fields([("ETag", "\"a\"")])).value(for: "Date") == nil)
    }

    @Test(arguments: [
        (12.9, "12"), (0, "0"), (-3, "0"), (3e12, "2147483648"), (.infinity, "2147483648"),
    ] as [(TimeInterval, String)])
    func headersWithAge(_ age: TimeInterval, _ expected: String) {
        let stored = F.fields([("Age", "100"), ("Content-Type", "text/plain"), ("age", "7")])
        let served = CacheRules.headersWithAge(stored, age: age)
        #expect(F.values("Age", in: served) == [expected])
        #expect(served.value(for: "Content-Type") == "text/plain")
    }
}
