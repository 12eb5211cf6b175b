import Foundation
import Testing
@testable import FetchKit

/// Fixed instants and header builders for the cache rule tests (never the clock).
enum CacheRuleFixture {
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
    typealias F = CacheRuleFixture

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

/// When a stored response may be reused (RFC 9111 §4, §4.2.4, §5.2; RFC 5861 §4).
@Suite struct CacheReuseTests {
    typealias F = CacheRuleFixture

    struct ReuseCase: Sendable, CustomTestStringConvertible {
        let name: String
        var response = "max-age=60"
        var request: [HTTPHeaders.Header] = []
        let now: TimeInterval
        let expected: CacheReuse
        var testDescription: String { name }
    }

    static func cc(_ value: String) -> [HTTPHeaders.Header] { [.init(name: "Cache-Control", value: value)] }

    static let reuseCases: [ReuseCase] = [
        ReuseCase(name: "fresh", now: 10, expected: .fresh),
        ReuseCase(name: "stale at the lifetime", now: 60, expected: .revalidate),
        ReuseCase(name: "request no-cache", request: cc("no-cache"), now: 10, expected: .revalidate),
        ReuseCase(name: "request Pragma no-cache", request: [.init(name: "Pragma", value: "no-cache")], now: 10, expected: .revalidate),
        ReuseCase(name: "response no-cache beats max-age", response: "max-age=60, no-cache", now: 10, expected: .revalidate),
        ReuseCase(name: "response qualified no-cache", response: "max-age=60, no-cache=\"Set-Cookie\"", now: 10, expected: .revalidate),
        ReuseCase(name: "request max-age exceeded", request: cc("max-age=5"), now: 10, expected: .revalidate),
        ReuseCase(name: "request max-age met", request: cc("max-age=20"), now: 10, expected: .fresh),
        ReuseCase(name: "request max-age=0", request: cc("max-age=0"), now: 1, expected: .revalidate),
        ReuseCase(name: "request invalid max-age is 0", request: cc("max-age=soon"), now: 1, expected: .revalidate),
        ReuseCase(name: "min-fresh not met", request: cc("min-fresh=30"), now: 40, expected: .revalidate),
        ReuseCase(name: "min-fresh met", request: cc("min-fresh=10"), now: 40, expected: .fresh),
        ReuseCase(name: "stale, no max-stale", now: 90, expected: .revalidate),
        ReuseCase(name: "max-stale without value", request: cc("max-stale"), now: 90, expected: .staleAllowed),
        ReuseCase(name: "max-stale too small", request: cc("max-stale=20"), now: 90, expected: .revalidate),
        ReuseCase(name: "max-stale just enough", request: cc("max-stale=30"), now: 90, expected: .staleAllowed),
        ReuseCase(name: "fresh with max-stale is fresh", request: cc("max-stale"), now: 10, expected: .fresh),
        ReuseCase(name: "must-revalidate beats max-stale", response: "max-age=60, must-revalidate", request: cc("max-stale"), now: 90,
                  expected: .revalidate),
        ReuseCase(name: "must-revalidate while fresh", response: "max-age=60, must-revalidate", now: 10, expected: .fresh),
        ReuseCase(name: "no-cache beats max-stale", response: "max-age=60, no-cache", request: cc("max-stale"), now: 90, expected: .revalidate),
        ReuseCase(name: "min-fresh beats max-stale", request: cc("min-fresh=5, max-stale"), now: 90, expected: .revalidate),
        ReuseCase(name: "max-age and max-stale together", request: cc("max-age=100, max-stale=100"), now: 90, expected: .staleAllowed),
        ReuseCase(name: "max-age limits max-stale", request: cc("max-age=50, max-stale"), now: 90, expected: .revalidate),
        ReuseCase(name: "immutable while fresh", response: "max-age=60, immutable", now: 10, expected: .fresh),
        ReuseCase(name: "immutable yields to request no-cache", response: "max-age=60, immutable", request: cc("no-cache"), now: 10,
                  expected: .revalidate),
        ReuseCase(name: "immutable once stale", response: "max-age=60, immutable", now: 61, expected: .revalidate),
        ReuseCase(name: "invalid max-age is stale", response: "max-age=1, max-age=2", now: 0, expected: .revalidate),
        ReuseCase(name: "invalid max-age, max-stale", response: "max-age=x", request: cc("max-stale"), now: 0, expected: .staleAllowed),
        ReuseCase(name: "no freshness at all", response: "", now: 0, expected: .revalidate),
    ]

    @Test(arguments: reuseCases)
    func reuse(_ c: ReuseCase) {
        var request = HTTPHeaders()
        for field in c.request { request.add(name: field.name, value: field.value) }
        let stored = F.freshness([("Cache-Control", c.response)])
        #expect(CacheRules.reuse(stored, request: CacheControl(request: request), now: F.at(c.now)) == c.expected)
    }

    @Test func invalidatedIsRevalidated() {
        let stored = F.freshness([("Cache-Control", "max-age=60")], invalidated: true)
        #expect(CacheRules.reuse(stored, request: CacheControl(), now: F.at(1)) == .revalidate)
    }

    /// A configured ttl replaces the response's freshness, its `no-cache` included.
    @Test func ttlOverridesResponseNoCache() {
        let stored = F.freshness([("Cache-Control", "no-cache")], ttl: 600)
        #expect(CacheRules.reuse(stored, request: CacheControl(), now: F.at(10)) == .fresh)
        #expect(CacheRules.reuse(stored, request: CacheControl(parsing: "no-cache"), now: F.at(10)) == .revalidate)
        #expect(CacheRules.reuse(F.freshness([("Cache-Control", "no-cache")]), request: CacheControl(), now: F.at(10)) == .revalidate)
    }

    struct ErrorCase: Sendable, CustomTestStringConvertible {
        let name: String
        var response = "max-age=60"
        var request = ""
        var window: TimeInterval?
        var now: TimeInterval = 90  // stale for 30 s
        let allowed: Bool
        var testDescription: String { name }
    }

    static let errorCases: [ErrorCase] = [
        ErrorCase(name: "fresh, no window", now: 10, allowed: true),
        ErrorCase(name: "stale, no window", allowed: false),
        ErrorCase(name: "configured window covers it", window: 30, allowed: true),
        ErrorCase(name: "configured window too short", window: 29, allowed: false),
        ErrorCase(name: "response stale-if-error covers it", response: "max-age=60, stale-if-error=60", allowed: true),
        ErrorCase(name: "response stale-if-error too short", response: "max-age=60, stale-if-error=10", allowed: false),
        ErrorCase(name: "request stale-if-error covers it", request: "stale-if-error=60", allowed: true),
        ErrorCase(name: "request stale-if-error too short", request: "stale-if-error=10", allowed: false),
        ErrorCase(name: "largest window wins: response", response: "max-age=60, stale-if-error=60", window: 10, allowed: true),
        ErrorCase(name: "request does not narrow the response", response: "max-age=60, stale-if-error=60", request: "stale-if-error=5",
                  allowed: true),
        ErrorCase(name: "must-revalidate, stale", response: "max-age=60, must-revalidate, stale-if-error=600", window: 3600, allowed: false),
        ErrorCase(name: "must-revalidate, fresh", response: "max-age=60, must-revalidate", now: 10, allowed: true),
        ErrorCase(name: "no-cache, stale", response: "max-age=60, no-cache", window: 3600, allowed: false),
        ErrorCase(name: "no-cache, fresh", response: "max-age=60, no-cache", now: 10, allowed: false),
        ErrorCase(name: "invalid freshness counts as stale since receipt", response: "max-age=abc", window: 100, allowed: true),
        ErrorCase(name: "invalid freshness beyond the window", response: "max-age=abc", window: 80, allowed: false),
    ]

    @Test(arguments: errorCases)
    func staleOnError(_ c: ErrorCase) {
        let stored = F.freshness([("Cache-Control", c.response)])
        let allowed = CacheRules.mayServeStaleOnError(stored, request: CacheControl(parsing: c.request), window: c.window, now: F.at(c.now))
        #expect(allowed == c.allowed)
    }
}

/// Validation and freshening: conditional requests, `304` and `HEAD` (RFC 9111 §4.3).
@Suite struct CacheValidationTests {
    typealias F = CacheRuleFixture

    @Test func conditionalHeadersFromBothValidators() {
        let stored = F.fields([("ETag", " \"abc\" "), ("Last-Modified", F.date(-100))])
        let conditional = CacheRules.conditionalHeaders(for: stored)
        #expect(conditional.map(\.name) == ["If-None-Match", "If-Modified-Since"])
        #expect(conditional.value(for: "If-None-Match") == "\"abc\"")
        #expect(conditional.value(for: "If-Modified-Since") == F.date(-100))
    }

    @Test(arguments: [
        ([("ETag", "W/\"abc\"")], [("If-None-Match", "W/\"abc\"")]),
        ([("Last-Modified", "yesterday"), ("Date", F.date(0))], []),
        ([("Date", F.date(0))], []),
        ([("Last-Modified", F.date(-5))], [("If-Modified-Since", F.date(-5))]),
    ] as [([(String, String)], [(String, String)])])
    func conditionalHeaders(_ stored: [(String, String)], _ expected: [(String, String)]) {
        let conditional = CacheRules.conditionalHeaders(for: F.fields(stored))
        #expect(conditional.map { "\($0.name): \($0.value)" } == expected.map { "\($0.0): \($0.1)" })
        #expect(CacheRules.hasValidator(F.fields(stored)) == !expected.isEmpty)
    }

    struct MatchCase: Sendable, CustomTestStringConvertible {
        let name: String
        let stored: [HTTPHeaders.Header]
        let notModified: [HTTPHeaders.Header]
        let matches: Bool
        var testDescription: String { name }
    }

    static func h(_ pairs: (String, String)...) -> [HTTPHeaders.Header] { pairs.map { .init(name: $0.0, value: $0.1) } }
    static let imf = "Sun, 06 Nov 1994 08:49:37 GMT", rfc850 = "Sunday, 06-Nov-94 08:49:37 GMT", later = "Mon, 07 Nov 1994 08:49:37 GMT"

    static let matchCases: [MatchCase] = [
        MatchCase(name: "same strong ETag", stored: h(("ETag", "\"a\"")), notModified: h(("ETag", "\"a\"")), matches: true),
        MatchCase(name: "other strong ETag", stored: h(("ETag", "\"a\"")), notModified: h(("ETag", "\"b\"")), matches: false),
        MatchCase(name: "strong in 304, weak stored", stored: h(("ETag", "W/\"a\"")), notModified: h(("ETag", "\"a\"")), matches: false),
        MatchCase(name: "weak in 304 compares weakly", stored: h(("ETag", "\"a\"")), notModified: h(("ETag", "W/\"a\"")), matches: true),
        MatchCase(name: "weak both", stored: h(("ETag", "W/\"a\"")), notModified: h(("ETag", "W/\"a\"")), matches: true),
        MatchCase(name: "ETag in 304, none stored", stored: h(("Last-Modified", imf)), notModified: h(("ETag", "\"a\"")), matches: false),
        MatchCase(name: "ETag decides over Last-Modified", stored: h(("ETag", "\"a\""), ("Last-Modified", imf)),
                  notModified: h(("ETag", "\"a\""), ("Last-Modified", later)), matches: true),
        MatchCase(name: "same Last-Modified, other format", stored: h(("Last-Modified", imf)), notModified: h(("Last-Modified", rfc850)), matches: true),
        MatchCase(name: "other Last-Modified", stored: h(("Last-Modified", imf)), notModified: h(("Last-Modified", later)), matches: false),
        MatchCase(name: "no validators on either", stored: h(("Content-Type", "text/plain")), notModified: h(("Date", imf)), matches: true),
        MatchCase(name: "no validator in 304, stored has one", stored: h(("ETag", "\"a\"")), notModified: h(("Date", imf)), matches: false),
    ]

    @Test(arguments: matchCases)
    func notModifiedMatches(_ c: MatchCase) {
        let stored = F.fields(c.stored.map { ($0.name, $0.value) }), notModified = F.fields(c.notModified.map { ($0.name, $0.value) })
        #expect(CacheRules.notModifiedMatches(stored: stored, notModified: notModified) == c.matches)
    }

    static let stored = F.fields([
        ("Date", F.date(0)), ("Age", "5"), ("Content-Type", "text/plain"), ("ETag", "\"a\""), ("Content-Length", "10"),
        ("Content-Encoding", "gzip"), ("Cache-Control", "max-age=60"), ("X-Multi", "1"), ("X-Multi", "2"), ("X-Kept", "k"),
    ])

    @Test func notModifiedUpdatesAllButExcludedFields() {
        let response = F.fields([
            ("Date", F.date(100)), ("Cache-Control", "max-age=120"), ("ETag", "\"a\""), ("Content-Length", "0"),
            ("Content-Encoding", "br"), ("Content-Range", "bytes 0-1/2"), ("Set-Cookie", "a=b"), ("Connection", "close, X-Hop"),
            ("X-Hop", "h"), ("Keep-Alive", "timeout=1"), ("Transfer-Encoding", "chunked"), ("x-multi", "3"), ("Proxy-Authenticate", "Basic"),
            ("X-Secret", "s"),
        ])
        let updated = CacheRules.updatedHeaders(stored: Self.stored, from: response, strip: ["X-Secret"])
        #expect(F.values("Date", in: updated) == [F.date(100)])
        #expect(F.values("Age", in: updated) == [])
        #expect(F.values("Cache-Control", in: updated) == ["max-age=120"])
        #expect(F.values("X-Multi", in: updated) == ["3"])
        #expect(F.values("Content-Length", in: updated) == ["10"])
        #expect(F.values("Content-Encoding", in: updated) == ["gzip"])
        #expect(F.values("Content-Type", in: updated) == ["text/plain"])
        #expect(F.values("X-Kept", in: updated) == ["k"])
        for name in ["Content-Range", "Set-Cookie", "Connection", "X-Hop", "Keep-Alive", "Transfer-Encoding", "Proxy-Authenticate", "X-Secret"] {
            #expect(updated.value(for: name) == nil, "\(name)")
        }
        // The freshened entry is fresh again from the 304's times.
        let freshness = CacheFreshness(status: 200, headers: updated, requestTime: F.at(100), responseTime: F.at(100))
        #expect(freshness.isFresh(now: F.at(200)))
    }

    @Test func notModifiedWithoutDateOrAgeDropsTheOldOnes() {
        let updated = CacheRules.updatedHeaders(stored: Self.stored, from: F.fields([("ETag", "\"a\"")]))
        #expect(updated.value(for: "Date") == nil)
        #expect(updated.value(for: "Age") == nil)
        let freshness = CacheFreshness(status: 200, headers: updated, requestTime: F.at(1000), responseTime: F.at(1000))
        #expect(freshness.currentAge(now: F.at(1010)) == 10)
    }

    struct HeadCase: Sendable, CustomTestStringConvertible {
        let name: String
        let stored: [HTTPHeaders.Header]
        let head: [HTTPHeaders.Header]
        var bodySize: Int64?
        let updates: Bool
        var testDescription: String { name }
    }

    static let headCases: [HeadCase] = [
        HeadCase(name: "same strong ETag", stored: h(("ETag", "\"a\"")), head: h(("ETag", "\"a\"")), updates: true),
        HeadCase(name: "same weak ETag", stored: h(("ETag", "W/\"a\"")), head: h(("ETag", "W/\"a\"")), updates: true),
        HeadCase(name: "other ETag", stored: h(("ETag", "\"a\"")), head: h(("ETag", "\"b\"")), updates: false),
        HeadCase(name: "weak vs strong", stored: h(("ETag", "\"a\"")), head: h(("ETag", "W/\"a\"")), updates: false),
        HeadCase(name: "stored ETag, HEAD only Last-Modified", stored: h(("ETag", "\"a\""), ("Last-Modified", imf)),
                 head: h(("Last-Modified", imf)), updates: false),
        HeadCase(name: "no ETags, same Last-Modified", stored: h(("Last-Modified", imf)), head: h(("Last-Modified", rfc850)), updates: true),
        HeadCase(name: "no ETags, other Last-Modified", stored: h(("Last-Modified", imf)), head: h(("Last-Modified", later)), updates: false),
        HeadCase(name: "same ETag, other Last-Modified", stored: h(("ETag", "\"a\""), ("Last-Modified", imf)),
                 head: h(("ETag", "\"a\""), ("Last-Modified", later)), updates: false),
        HeadCase(name: "no validators", stored: h(("Content-Type", "a")), head: h(("Content-Type", "a")), updates: false),
        HeadCase(name: "same Content-Length", stored: h(("ETag", "\"a\""), ("Content-Length", "10")),
                 head: h(("ETag", "\"a\""), ("Content-Length", "10")), updates: true),
        HeadCase(name: "other Content-Length", stored: h(("ETag", "\"a\""), ("Content-Length", "10")),
                 head: h(("ETag", "\"a\""), ("Content-Length", "11")), updates: false),
        HeadCase(name: "Content-Length vs stored body size", stored: h(("ETag", "\"a\"")), head: h(("ETag", "\"a\""), ("Content-Length", "10")),
                 bodySize: 10, updates: true),
        HeadCase(name: "Content-Length vs other body size", stored: h(("ETag", "\"a\"")), head: h(("ETag", "\"a\""), ("Content-Length", "10")),
                 bodySize: 9, updates: false),
    ]

    @Test(arguments: headCases)
    func headResponse(_ c: HeadCase) {
        let stored = F.fields(c.stored.map { ($0.name, $0.value) }), head = F.fields(c.head.map { ($0.name, $0.value) })
        let result = CacheRules.headResponse(head, updates: stored, storedBodySize: c.bodySize)
        #expect((result != .invalidate) == c.updates)
    }

    @Test func headUpdateKeepsTheBodyFields() {
        let head = F.fields([("ETag", "\"a\""), ("Content-Length", "10"), ("Cache-Control", "max-age=300"), ("Date", F.date(50))])
        guard case .update(let headers) = CacheRules.headResponse(head, updates: Self.stored) else {
            Issue.record("expected an update")
            return
        }
        #expect(F.values("Cache-Control", in: headers) == ["max-age=300"])
        #expect(F.values("Content-Encoding", in: headers) == ["gzip"])
        #expect(F.values("Content-Length", in: headers) == ["10"])
        #expect(F.values("Date", in: headers) == [F.date(50)])
    }
}
