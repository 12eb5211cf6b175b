import Foundation
import Testing
@testable import FetchKit

/// Fixed instants and header builders for the cache rule tests (never the clock).
enum CacheFixture {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func at(_ seconds: TimeInterval) -> Date { t0.addingTimeInterval(seconds) }

    static func date(_ seconds: TimeInterval) -> String { HTTPDate.format(at(seconds)) }

    /// Field lines in order, repeated names kept.
    static func fields(_ pairs: [(String, String)]) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for (name, value) in pairs { headers.add(name: name, value: value) }
        return headers
    }

    /// Every value of `name`, in order.
    static func values(_ name: String, in headers: HTTPHeaders) -> [String] {
        headers.filter { HTTPHeaders.sameName($0.name, name) }.map(\.value)
    }

    /// A response received at t0 (sent at t0, `Date: t0`) with `pairs` as further fields.
    static func freshness(_ pairs: [(String, String)], status: Int = 200, heuristic: Bool = false, ttl: TimeInterval? = nil,
                          invalidated: Bool = false) -> CacheFreshness {
        CacheFreshness(status: status, headers: fields([("Date", date(0))] + pairs), requestTime: t0, responseTime: t0,
                       heuristic: heuristic, ttl: ttl, invalidated: invalidated)
    }
}

/// Freshness lifetime, age and staleness (RFC 9111 §4.2).
@Suite struct CacheFreshnessTests {
    typealias F = CacheFixture

    struct LifetimeCase: Sendable, CustomTestStringConvertible {
        let name: String
        var status = 200
        let fields: [HTTPHeaders.Header]
        var heuristic = false
        var ttl: TimeInterval?
        let lifetime: TimeInterval
        var isHeuristic = false
        var invalid = false
        var testDescription: String { name }
    }

    static func h(_ pairs: (String, String)...) -> [HTTPHeaders.Header] { pairs.map { .init(name: $0.0, value: $0.1) } }

    static let lifetimeCases: [LifetimeCase] = [
        LifetimeCase(name: "max-age", fields: h(("Date", F.date(0)), ("Cache-Control", "max-age=60")), lifetime: 60),
        LifetimeCase(name: "max-age beats Expires", fields: h(("Date", F.date(0)), ("Expires", F.date(500)), ("Cache-Control", "max-age=60")), lifetime: 60),
        LifetimeCase(name: "s-maxage ignored", fields: h(("Date", F.date(0)), ("Cache-Control", "s-maxage=600")), lifetime: 0),
        LifetimeCase(name: "s-maxage ignored, Expires used", fields: h(("Date", F.date(0)), ("Expires", F.date(100)), ("Cache-Control", "s-maxage=600")), lifetime: 100),
        LifetimeCase(name: "Expires - Date", fields: h(("Date", F.date(-50)), ("Expires", F.date(50))), lifetime: 100),
        LifetimeCase(name: "Expires without Date: response time", fields: h(("Expires", F.date(100))), lifetime: 100),
        LifetimeCase(name: "Expires with a bad Date: response time", fields: h(("Date", "yesterday"), ("Expires", F.date(100))), lifetime: 100),
        LifetimeCase(name: "Expires 0 is expired", fields: h(("Date", F.date(0)), ("Expires", "0")), lifetime: 0),
        LifetimeCase(name: "Expires garbage is expired", fields: h(("Date", F.date(0)), ("Expires", "Thu, 99 Foo 2030")), lifetime: 0),
        LifetimeCase(name: "Expires before Date", fields: h(("Date", F.date(0)), ("Expires", F.date(-3600))), lifetime: 0),
        LifetimeCase(name: "two identical Expires", fields: h(("Date", F.date(0)), ("Expires", F.date(100)), ("Expires", F.date(100))), lifetime: 100),
        LifetimeCase(name: "two different Expires: stale", fields: h(("Date", F.date(0)), ("Expires", F.date(100)), ("Expires", F.date(200))),
                     lifetime: 0, invalid: true),
        LifetimeCase(name: "invalid max-age: stale, Expires not used", fields: h(("Date", F.date(0)), ("Expires", F.date(100)), ("Cache-Control", "max-age=abc")),
                     lifetime: 0, invalid: true),
        LifetimeCase(name: "nothing explicit, heuristic off", fields: h(("Date", F.date(0)), ("Last-Modified", F.date(-1000))), lifetime: 0),
        LifetimeCase(name: "heuristic: 10% since Last-Modified", fields: h(("Date", F.date(0)), ("Last-Modified", F.date(-1000))),
                     heuristic: true, lifetime: 100, isHeuristic: true),
        LifetimeCase(name: "heuristic capped at 24 h", fields: h(("Date", F.date(0)), ("Last-Modified", F.date(-30 * 86_400))),
                     heuristic: true, lifetime: 86_400, isHeuristic: true),
        LifetimeCase(name: "heuristic, Last-Modified in the future", fields: h(("Date", F.date(0)), ("Last-Modified", F.date(1000))),
                     heuristic: true, lifetime: 0, isHeuristic: true),
        LifetimeCase(name: "heuristic without Last-Modified", fields: h(("Date", F.date(0))), heuristic: true, lifetime: 0),
        LifetimeCase(name: "heuristic, bad Last-Modified", fields: h(("Date", F.date(0)), ("Last-Modified", "last week")), heuristic: true, lifetime: 0),
        LifetimeCase(name: "heuristic not for 302", status: 302, fields: h(("Date", F.date(0)), ("Last-Modified", F.date(-1000))),
                     heuristic: true, lifetime: 0),
        LifetimeCase(name: "heuristic for 302 with public", status: 302,
                     fields: h(("Date", F.date(0)), ("Last-Modified", F.date(-1000)), ("Cache-Control", "public")),
                     heuristic: true, lifetime: 100, isHeuristic: true),
        LifetimeCase(name: "heuristic for 404", status: 404, fields: h(("Date", F.date(0)), ("Last-Modified", F.date(-1000))),
                     heuristic: true, lifetime: 100, isHeuristic: true),
        LifetimeCase(name: "explicit freshness beats heuristic", fields: h(("Date", F.date(0)), ("Last-Modified", F.date(-1000)), ("Cache-Control", "max-age=7")),
                     heuristic: true, lifetime: 7),
        LifetimeCase(name: "Expires 0 beats heuristic", fields: h(("Date", F.date(0)), ("Last-Modified", F.date(-1000)), ("Expires", "0")),
                     heuristic: true, lifetime: 0),
        LifetimeCase(name: "ttl replaces max-age", fields: h(("Date", F.date(0)), ("Cache-Control", "max-age=60")), ttl: 600, lifetime: 600),
        LifetimeCase(name: "ttl replaces a heuristic", fields: h(("Date", F.date(0)), ("Last-Modified", F.date(-1000))), heuristic: true, ttl: 5, lifetime: 5),
    ]

    @Test(arguments: lifetimeCases)
    func freshnessLifetime(_ c: LifetimeCase) {
        var headers = HTTPHeaders()
        for field in c.fields { headers.add(name: field.name, value: field.value) }
        let freshness = CacheFreshness(status: c.status, headers: headers, requestTime: F.t0, responseTime: F.t0, heuristic: c.heuristic, ttl: c.ttl)
        #expect(freshness.freshnessLifetime == c.lifetime)
        #expect(freshness.isHeuristic == c.isHeuristic)
        #expect(freshness.hasInvalidFreshness == c.invalid)
        #expect(freshness.isOverridden == (c.ttl != nil))
    }

    struct AgeCase: Sendable, CustomTestStringConvertible {
        let name: String
        let fields: [HTTPHeaders.Header]
        let age: TimeInterval
        var now: TimeInterval = 12
        var testDescription: String { name }
    }

    /// Sent at t0, received at t0+2, asked at t0+12 unless stated: response_delay 2, resident 10.
    static let ageCases: [AgeCase] = [
        AgeCase(name: "no Age: response delay + resident time", fields: h(("Date", F.date(1))), age: 12),
        AgeCase(name: "Age adds to the response delay", fields: h(("Date", F.date(1)), ("Age", "30")), age: 42),
        AgeCase(name: "Age list: first member", fields: h(("Date", F.date(1)), ("Age", "30, 50")), age: 42),
        AgeCase(name: "two Age lines: the first", fields: h(("Date", F.date(1)), ("Age", "30"), ("Age", "100")), age: 42),
        AgeCase(name: "invalid Age ignored", fields: h(("Date", F.date(1)), ("Age", "abc")), age: 12),
        AgeCase(name: "negative Age ignored", fields: h(("Date", F.date(1)), ("Age", "-5")), age: 12),
        AgeCase(name: "huge Age is 2^31", fields: h(("Date", F.date(1)), ("Age", "99999999999999")), age: 2_147_483_648 + 12),
        AgeCase(name: "apparent age from an old Date", fields: h(("Date", F.date(-98))), age: 110),
        AgeCase(name: "apparent age vs smaller Age", fields: h(("Date", F.date(-98)), ("Age", "5")), age: 110),
        AgeCase(name: "Date in the future: apparent age 0", fields: h(("Date", F.date(500))), age: 12),
        AgeCase(name: "no Date: received time", fields: h(), age: 12),
        AgeCase(name: "bad Date: received time", fields: h(("Date", "not a date")), age: 12),
        AgeCase(name: "clock before the response: no resident time", fields: h(("Date", F.date(1)), ("Age", "30")), age: 32, now: -100),
    ]

    @Test(arguments: ageCases)
    func currentAge(_ c: AgeCase) {
        var headers = HTTPHeaders()
        for field in c.fields { headers.add(name: field.name, value: field.value) }
        let freshness = CacheFreshness(status: 200, headers: headers, requestTime: F.t0, responseTime: F.at(2))
        #expect(freshness.currentAge(now: F.at(c.now)) == c.age)
    }

    @Test func freshUntilLifetimeThenStale() {
        let freshness = F.freshness([("Cache-Control", "max-age=60")])
        #expect(freshness.isFresh(now: F.at(59)))
        #expect(freshness.staleness(now: F.at(59)) == 0)
        #expect(freshness.remainingFreshness(now: F.at(59)) == 1)
        #expect(!freshness.isFresh(now: F.at(60)))  // fresh means lifetime > age
        #expect(freshness.staleness(now: F.at(90)) == 30)
    }

    @Test func invalidatedIsNeverFresh() {
        let freshness = F.freshness([("Cache-Control", "max-age=60")], invalidated: true)
        #expect(!freshness.isFresh(now: F.at(1)))
        #expect(F.freshness([("Cache-Control", "max-age=60")]).isFresh(now: F.at(1)))
    }
}

/// What may be stored (RFC 9111 §3) and how it is stored and served (§3.1, §5.1).
@Suite struct CacheStorageTests {
    typealias F = CacheFixture

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
