import Foundation
import Testing
@testable import FetchKit

/// `Cache-Control` parsing (RFC 9111 §5.2): each case is a field value and the whole parsed value
/// it must give, so a directive parsed into the wrong property fails too.
@Suite struct CacheControlTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let value: String
        let expected: CacheControl
        var testDescription: String { value }

        init(_ value: String, _ build: (inout CacheControl) -> Void) {
            self.value = value
            var expected = CacheControl()
            build(&expected)
            self.expected = expected
        }
    }

    static let cases: [Case] = [
        // Plain directives, names without case.
        Case("max-age=60") { $0.maxAge = 60 },
        Case("MAX-AGE=60") { $0.maxAge = 60 },
        Case("Max-Age=60, No-Store") { $0.maxAge = 60; $0.noStore = true },
        Case("max-age=0") { $0.maxAge = 0 },
        // Whitespace and empty list elements.
        Case("max-age = 60") { $0.maxAge = 60 },
        Case("  max-age=60  ,  public ") { $0.maxAge = 60; $0.isPublic = true },
        Case("\tno-cache\t,\tmax-age=3") { $0.noCache = true; $0.maxAge = 3 },
        Case(",, ,no-store,,") { $0.noStore = true },
        Case("") { _ in },
        // The quoted form of delta-seconds is accepted (§5.2).
        Case("max-age=\"60\"") { $0.maxAge = 60 },
        // Duplicates: the same max-age is harmless, different ones make the response stale (§4.2.1).
        Case("max-age=60, max-age=60") { $0.maxAge = 60 },
        Case("max-age=60, max-age=120") { $0.maxAge = 0; $0.hasInvalidFreshness = true },
        Case("max-age=60, max-age=abc") { $0.maxAge = 0; $0.hasInvalidFreshness = true },
        // Invalid delta-seconds (§1.2.2): stale (§4.2.1).
        Case("max-age=-1") { $0.maxAge = 0; $0.hasInvalidFreshness = true },
        Case("max-age=abc") { $0.maxAge = 0; $0.hasInvalidFreshness = true },
        Case("max-age=1.5") { $0.maxAge = 0; $0.hasInvalidFreshness = true },
        Case("max-age=") { $0.maxAge = 0; $0.hasInvalidFreshness = true },
        Case("max-age") { $0.maxAge = 0; $0.hasInvalidFreshness = true },
        Case("max-age=\"\"") { $0.maxAge = 0; $0.hasInvalidFreshness = true },
        Case("max-age=5 6") { $0.maxAge = 0; $0.hasInvalidFreshness = true },
        Case("max-age=60 ; x") { $0.maxAge = 0; $0.hasInvalidFreshness = true },
        // Huge values are 2^31 (§1.2.2).
        Case("max-age=2147483647") { $0.maxAge = 2_147_483_647 },
        Case("max-age=2147483648") { $0.maxAge = 2_147_483_648 },
        Case("max-age=2147483649") { $0.maxAge = 2_147_483_648 },
        Case("max-age=99999999999999999999999999999") { $0.maxAge = 2_147_483_648 },
        // Quoted arguments with commas and escapes.
        Case("no-cache=\"Set-Cookie, X-Foo\", max-age=5") { $0.noCache = true; $0.noCacheFields = ["set-cookie", "x-foo"]; $0.maxAge = 5 },
        Case("private=\"a\", public") { $0.isPrivate = true; $0.isPublic = true },
        Case("foo=\"a,b\\\"c\", no-store") { $0.extensions = [.init(name: "foo", value: "a,b\"c")]; $0.noStore = true },
        Case("no-cache=\"a, max-age=3") { $0.noCache = true; $0.noCacheFields = ["a", "max-age=3"] },
        // Elements that are not directives are skipped, quotes included.
        Case("=5, max-age=7") { $0.maxAge = 7 },
        Case("\"quoted, junk\", max-age=7") { $0.maxAge = 7 },
        // Conflicts are kept for the rules to settle (most restrictive wins there).
        Case("max-age=60, no-cache") { $0.maxAge = 60; $0.noCache = true },
        Case("no-store, max-age=60, public") { $0.noStore = true; $0.maxAge = 60; $0.isPublic = true },
        // Request directives.
        Case("max-stale") { $0.maxStale = .infinity },
        Case("max-stale=30") { $0.maxStale = 30 },
        Case("max-stale=abc") { _ in },
        Case("max-stale, max-stale=10") { $0.maxStale = 10 },
        Case("max-stale=30, max-stale=10") { $0.maxStale = 10 },
        Case("min-fresh=10, min-fresh=20") { $0.minFresh = 20 },
        Case("min-fresh=-3") { _ in },
        Case("only-if-cached, no-transform") { $0.onlyIfCached = true; $0.noTransform = true },
        // Response directives.
        Case("stale-if-error=300, stale-while-revalidate=60") { $0.staleIfError = 300; $0.staleWhileRevalidate = 60 },
        Case("stale-if-error=300, stale-if-error=100") { $0.staleIfError = 100 },
        Case("stale-if-error=soon") { _ in },
        Case("must-revalidate, proxy-revalidate, must-understand, immutable") {
            $0.mustRevalidate = true; $0.proxyRevalidate = true; $0.mustUnderstand = true; $0.immutable = true
        },
        Case("s-maxage=10") { $0.sharedMaxAge = 10 },
        Case("s-maxage=10, s-maxage=20") { $0.sharedMaxAge = 0 },
        // Unknown directives are kept aside and change nothing else (§5.2.3).
        Case("community=\"UCI\", x-ext, max-age=1") {
            $0.extensions = [.init(name: "community", value: "UCI"), .init(name: "x-ext")]; $0.maxAge = 1
        },
    ]

    @Test(arguments: cases)
    func parses(_ c: Case) {
        #expect(CacheControl(parsing: c.value) == c.expected)
    }

    /// Several field lines are one list (RFC 9110 §5.3).
    @Test func combinesFieldLines() {
        var headers = HTTPHeaders()
        headers.add(name: "Cache-Control", value: "max-age=60")
        headers.add(name: "Content-Type", value: "text/plain")
        headers.add(name: "cache-control", value: "no-cache, must-revalidate")
        let parsed = CacheControl(headers)
        #expect(parsed.maxAge == 60)
        #expect(parsed.noCache)
        #expect(parsed.mustRevalidate)
        #expect(!parsed.hasInvalidFreshness)
    }

    /// A duplicate `max-age` across lines is as stale as one within a line.
    @Test func duplicateMaxAgeAcrossLines() {
        var headers = HTTPHeaders()
        headers.add(name: "Cache-Control", value: "max-age=60")
        headers.add(name: "Cache-Control", value: "max-age=30")
        let parsed = CacheControl(headers)
        #expect(parsed.maxAge == 0)
        #expect(parsed.hasInvalidFreshness)
    }

    /// A quoted-string never spans field lines.
    @Test func quoteEndsWithItsLine() {
        var headers = HTTPHeaders()
        headers.add(name: "Cache-Control", value: "no-cache=\"a")
        headers.add(name: "Cache-Control", value: "max-age=5")
        #expect(CacheControl(headers).maxAge == 5)
    }

    struct PragmaCase: Sendable, CustomTestStringConvertible {
        let name: String
        let fields: [HTTPHeaders.Header]
        let noCache: Bool
        var testDescription: String { name }
    }

    static let pragmaCases: [PragmaCase] = [
        PragmaCase(name: "Pragma no-cache alone", fields: [.init(name: "Pragma", value: "no-cache")], noCache: true),
        PragmaCase(name: "case-insensitive, in a list", fields: [.init(name: "pragma", value: "x-foo, No-Cache")], noCache: true),
        PragmaCase(name: "other pragma", fields: [.init(name: "Pragma", value: "x-no-cache")], noCache: false),
        PragmaCase(name: "Cache-Control present: Pragma ignored",
                   fields: [.init(name: "Pragma", value: "no-cache"), .init(name: "Cache-Control", value: "max-age=5")], noCache: false),
        PragmaCase(name: "Cache-Control no-cache without Pragma", fields: [.init(name: "Cache-Control", value: "no-cache")], noCache: true),
        PragmaCase(name: "neither field", fields: [.init(name: "User-Agent", value: "no-cache"), .init(name: "Accept", value: "*/*")], noCache: false),
    ]

    /// `Pragma: no-cache` on a request without `Cache-Control` (RFC 7234 §5.4, RFC 9111 §5.4).
    @Test(arguments: pragmaCases)
    func pragmaOnRequests(_ c: PragmaCase) {
        var headers = HTTPHeaders()
        for field in c.fields { headers.add(name: field.name, value: field.value) }
        #expect(CacheControl(request: headers).noCache == c.noCache)
    }

    /// A response's `Pragma` means nothing (RFC 9111 §5.4).
    @Test func pragmaIgnoredOnResponses() {
        #expect(!CacheControl(HTTPHeaders([("Pragma", "no-cache")])).noCache)
    }

    @Test(arguments: [
        ("0", 0.0), ("60", 60), ("007", 7), ("2147483648", 2_147_483_648), ("18446744073709551616", 2_147_483_648),
    ] as [(String, Double)])
    func deltaSeconds(_ text: String, _ expected: Double) {
        #expect(CacheControl.deltaSeconds(text) == expected)
    }

    @Test(arguments: ["", "-1", "+1", "1.0", " 1", "1 ", "1e3", "٣"])
    func invalidDeltaSeconds(_ text: String) {
        #expect(CacheControl.deltaSeconds(text) == nil)
    }
}
