import Foundation
import Testing
@testable import FetchKit

/// The URL part of the key: canonical URLs (RFC 3986 §6.2.2–6.2.3) and origins (RFC 6454).
@Suite struct CacheKeyTests {
    @Test(arguments: [
        ("HTTP://Example.COM/a", "http://example.com/a"),
        ("http://example.com/A", "http://example.com/A"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com?x=1", "http://example.com/?x=1"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("http://example.com:0080/a", "http://example.com/a"),
        ("http://example.com:/a", "http://example.com/a"),
        ("https://example.com:443", "https://example.com/"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("http://example.com:443/", "http://example.com:443/"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://example.com/a#frag", "http://example.com/a"),
        ("http://example.com/a?q=1#frag", "http://example.com/a?q=1"),
        ("http://user:pw@Example.com:8080/a", "http://example.com:8080/a"),
        ("http://example.com/%7euser/%2f%41%2D", "http://example.com/~user/%2FA-"),
        ("http://example.com/a?q=%7e%2a&r=%e2%82%ac", "http://example.com/a?q=~%2A&r=%E2%82%AC"),
        ("http://example.com/a?b=2&a=1", "http://example.com/a?b=2&a=1"),
        ("http://example.com/a?q=a+b", "http://example.com/a?q=a+b"),
        ("http://example.com/a?", "http://example.com/a?"),
        ("http://example.com/a/../b/./c", "http://example.com/a/../b/./c"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://[::1]:80/x", "http://[::1]/x"),
        ("http://[::1]/x", "http://[::1]/x"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/"),
    ])
    func canonicalURL(_ input: String, _ expected: String) throws {
        let url = try #require(URL(string: input))
        #expect(CacheKey.canonicalURL(url) == expected)
    }

    /// URLs that differ only in ways RFC 3986 calls equivalent share a key.
    @Test func equivalentURLsShareAKey() throws {
        let a = try #require(URL(string: "HTTPS://API.example.org:443/v1/%7Eitems?id=%2f"))
        let b = try #require(URL(string: "https://api.example.org/v1/~items?id=%2F#top"))
        #expect(CacheKey.canonicalURL(a) == CacheKey.canonicalURL(b))
    }

    @Test(arguments: ["%", "%4", "%zz", "%%41"])
    func malformedPercentEncodingIsKept(_ text: String) {
        let expected = text == "%%41" ? "%A" : text
        #expect(CacheKey.normalizePercentEncoding(text) == expected)
    }

    @Test(arguments: [
        ("http://a.example/x", "http://A.example:80/y?z", true),
        ("https://a.example/", "https://a.example:443/other", true),
        ("http://a.example/", "https://a.example/", false),
        ("http://a.example/", "http://a.example:8080/", false),
        ("http://a.example:8080/", "http://a.example:8080/b", true),
        ("http://a.example/", "http://b.example/", false),
        ("http://a.example/", "http://user@a.example/", true),
    ])
    func sameOrigin(_ a: String, _ b: String, _ same: Bool) throws {
        let x = try #require(URL(string: a)), y = try #require(URL(string: b))
        #expect(CacheKey.sameOrigin(x, y) == same)
        #expect(CacheKey.sameOrigin(y, x) == same)
    }
}

/// The request-header part of the key: selecting a stored response by `Vary` (RFC 9111 §4.1).
@Suite struct CacheVaryTests {
    typealias F = CacheRuleFixture

    @Test(arguments: [
        ([], [] as [String]?),
        ([("Vary", "Accept-Encoding")], ["accept-encoding"]),
        ([("Vary", "User-Agent, Accept-Encoding"), ("vary", " accept-encoding ,Accept")], ["accept", "accept-encoding", "user-agent"]),
        ([("Vary", ", ,")], []),
        ([("Vary", "*")], nil),
        ([("Vary", "Accept, *")], nil),
        ([("Vary", "Accept"), ("Vary", "*")], nil),
    ] as [([(String, String)], [String]?)])
    func varyNames(_ fields: [(String, String)], _ expected: [String]?) {
        #expect(CacheRules.varyNames(F.fields(fields)) == expected)
    }

    @Test(arguments: [
        ([], nil),
        ([("Accept-Encoding", "")], ""),
        ([("accept-encoding", "gzip")], "gzip"),
        ([("Accept-Encoding", "gzip"), ("Accept-Encoding", " br , deflate")], "gzip, br, deflate"),
        ([("Accept-Encoding", "\"a,b\" ,c")], "\"a,b\", c"),
    ] as [([(String, String)], String?)])
    func normalizedValue(_ fields: [(String, String)], _ expected: String?) {
        #expect(CacheRules.normalizedValue(of: "Accept-Encoding", in: F.fields(fields)) == expected)
    }

    @Test func signatureIgnoresLineSplitsWhitespaceAndNameOrder() {
        let a = F.fields([("Accept-Encoding", "gzip, br"), ("Accept", "text/html")])
        let b = F.fields([("accept", "text/html"), ("ACCEPT-ENCODING", "gzip"), ("accept-encoding", "br ")])
        #expect(CacheRules.varySignature(names: ["accept-encoding", "accept"], request: a)
            == CacheRules.varySignature(names: ["Accept", "accept-encoding", "accept"], request: b))
        #expect(CacheRules.varySignature(names: ["accept", "accept-encoding"], request: a) == "accept=text/html\naccept-encoding=gzip, br")
    }

    @Test(arguments: [
        ([("Accept-Encoding", "gzip")], [("Accept-Encoding", "br")]),
        ([("Accept-Encoding", "")], []),
        ([("Accept-Encoding", "gzip")], []),
        ([("Accept-Encoding", "gzip, br")], [("Accept-Encoding", "br, gzip")]),
    ] as [([(String, String)], [(String, String)])])
    func signaturesDiffer(_ a: [(String, String)], _ b: [(String, String)]) {
        #expect(CacheRules.varySignature(names: ["accept-encoding"], request: F.fields(a))
            != CacheRules.varySignature(names: ["accept-encoding"], request: F.fields(b)))
    }

    @Test func absentFromBothMatches() {
        #expect(CacheRules.varySignature(names: ["accept"], request: F.fields([("X", "1")]))
            == CacheRules.varySignature(names: ["accept"], request: F.fields([])))
        #expect(CacheRules.varySignature(names: [], request: F.fields([("Accept", "x")])) == "")
    }
}
