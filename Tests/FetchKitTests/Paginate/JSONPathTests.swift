import Testing
@testable import FetchKit

/// The path language: JSON read with member order and number text kept, RFC 9535's selectors on
/// it, and the errors a user sees for a path that isn't one.
@Suite struct JSONPathTests {
    let document = try! JSONValue.parse("""
        {"store": {"book": [
            {"title": "A", "price": 8.95, "tags": ["x"]},
            {"title": "B", "price": 12.99},
            {"title": "C", "price": 8.99, "isbn": "0-553"},
            {"title": "D", "price": 22.99}
          ],
          "bicycle": {"color": "red", "price": 399}},
         "meta": {"next_cursor": "c20", "count": 4, "empty": [], "none": null},
         "weird key": 1, "ümlaut": 2}
        """)

    func select(_ path: String) throws -> [String] {
        try JSONPath(parsing: path).select(in: document).map(\.compactJSON)
    }

    @Test func namesIndexesAndWildcards() throws {
        #expect(try select("$.store.bicycle.color") == [#""red""#])
        #expect(try select("$['store']['bicycle']['price']") == ["399"])
        #expect(try select(#"$["weird key"]"#) == ["1"])
        #expect(try select("$.ümlaut") == ["2"])
        #expect(try select("$.store.book[0].title") == [#""A""#])
        #expect(try select("$.store.book[-1].title") == [#""D""#])
        #expect(try select("$.store.book[-5]") == [])
        #expect(try select("$.store.book[*].title") == [#""A""#, #""B""#, #""C""#, #""D""#])
        #expect(try select("$.store.bicycle.*") == [#""red""#, "399"])
        #expect(try select("$.store.book[0,2].title") == [#""A""#, #""C""#])
        #expect(try select("$.nothing.here") == [])
        #expect(try select("$") == [document.compactJSON])
    }

    @Test func slicesFollowRFC9535() throws {
        #expect(try select("$.store.book[1:3].title") == [#""B""#, #""C""#])
        #expect(try select("$.store.book[:2].title") == [#""A""#, #""B""#])
        #expect(try select("$.store.book[-2:].title") == [#""C""#, #""D""#])
        #expect(try select("$.store.book[::2].title") == [#""A""#, #""C""#])
        #expect(try select("$.store.book[::-1].title") == [#""D""#, #""C""#, #""B""#, #""A""#])
        #expect(try select("$.store.book[3:1:-1].title") == [#""D""#, #""C""#])
        #expect(try select("$.store.book[0:4:0]") == [])
        #expect(try select("$.store.book[1::9007199254740991].title") == [#""B""#])
        #expect(try select("$.store.book[::-9007199254740991].title") == [#""D""#])
    }

    @Test func descendantsInDocumentOrder() throws {
        #expect(try select("$..price") == ["8.95", "12.99", "8.99", "22.99", "399"])
        #expect(try select("$..book[-1].title") == [#""D""#])
        #expect(try select("$..isbn") == [#""0-553""#])
    }

    @Test func recordsAreAnArraysElementsOrAWildcardsMatches() throws {
        #expect(try JSONPath(parsing: "$.store.book").records(in: document).count == 4)
        #expect(try JSONPath(parsing: "$.store.book[*]").records(in: document).count == 4)
        #expect(try JSONPath(parsing: "$.store.book[*].title").records(in: document).map(\.compactJSON) == [#""A""#, #""B""#, #""C""#, #""D""#])
        #expect(try JSONPath(parsing: "$.meta.empty").records(in: document).isEmpty)
        #expect(try JSONPath(parsing: "$.store.bicycle").records(in: document).count == 1)
        #expect(try JSONPath(parsing: "$.missing").records(in: document).isEmpty)
        #expect(try JSONPath(parsing: "$.store.book").isSingular)
        #expect(try !JSONPath(parsing: "$..book").isSingular)
    }

    @Test(arguments: [
        ("items", 0, "a JSONPath starts with '$'", "write $.items"),
        (".items", 0, "a JSONPath starts with '$'", "write $.items"),
        ("$.items[?(@.a)]", 8, "filter selectors ([?…]) are not supported", "select with names, indexes, '*' and slices"),
        ("$...pageInfo", 3, "three dots in a row", "'..' selects descendants: write ..name"),
        ("$.items[0", 9, "a '[' is not closed", "end the selectors with ']'"),
        ("$.items[01]", 10, "an index has no leading zeros", nil),
        ("$['a", 4, "a quoted name is not closed", "end it with '"),
        ("$.", 2, "the path ends after '.'", nil),
        ("$x", 1, "unexpected 'x'", "segments are .name, .*, ..name or [selectors]"),
        ("$[1::9223372036854775807]", 24, "the index is too large", "indexes and slice bounds are within ±9007199254740991"),
    ] as [(String, Int, String, String?)])
    func badPathsSayWhatAndWhere(path: String, offset: Int, message: String, hint: String?) {
        #expect(throws: JSONPathError(message: message, offset: offset, hint: hint)) { try JSONPath(parsing: path) }
    }

    @Test func jsonKeepsOrderNumbersAndEscapes() throws {
        let text = #"{"b":1,"a":[1.50,-0,2e10,12345678901234567890],"s":"tab\there \"q\" \u00e9 \ud83d\ude00 \u0001","n":null,"t":true}"#
        let value = try JSONValue.parse(text)
        #expect(value.compactJSON == #"{"b":1,"a":[1.50,-0,2e10,12345678901234567890],"s":"tab\there \"q\" é 😀 \u0001","n":null,"t":true}"#)
        #expect(value["s"]?.text == "tab\there \"q\" é 😀 \u{01}")
        #expect(try JSONValue.parse(" [ ] ").compactJSON == "[]")
        #expect(try JSONValue.parse("{\n \"a\" : { } }").compactJSON == #"{"a":{}}"#)
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\x\"", "\"\\ud800\"", "tru", "[1] x", "\"a\u{01}\""])
    func notJSONIsRefused(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test func deepNestingIsRefusedNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(deep) }
    }

    @Test func linkHeadersAsGitHubSendsThem() {
        let value = #"<https://api.github.com/search?q=a%2Cb&page=2>; rel="next", <https://api.github.com/search?q=x&page=34>; rel="last""#
        #expect(LinkHeader.target(rel: "next", in: [value]) == "https://api.github.com/search?q=a%2Cb&page=2")
        #expect(LinkHeader.target(rel: "last", in: [value]) == "https://api.github.com/search?q=x&page=34")
        #expect(LinkHeader.target(rel: "prev", in: [value]) == nil)
        // Commas inside the target, several relation types, unquoted rel, other parameters, two fields.
        #expect(LinkHeader.target(rel: "next", in: ["</a,b>; title=\"x, y\"; rel=\"prev next\""]) == "/a,b")
        #expect(LinkHeader.target(rel: "NEXT", in: ["<Other>; rel=alternate", "</p2>;rel=next"]) == "/p2")
        #expect(LinkHeader.target(rel: "next", in: ["garbage, </ok>; rel=next"]) == "/ok")
    }
}
