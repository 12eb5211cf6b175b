import Foundation
import Testing
@testable import FetchKit

/// The hot paths a cache hit takes have shortcuts for the common case; each must answer exactly
/// as the general code does.
@Suite struct FastPathTests {
    /// Byte scans used on every request's URL agree with the string searches they replace.
    @Test(arguments: ["https://u:p@h/x", "http://h:1/a@b", "no scheme", "a:/b://c", "://", "x:", "é://ü@ñ", ""])
    func byteScansAgreeWithStringSearch(text: String) {
        #expect(UTF8Text.contains(UInt8(ascii: "@"), in: text) == text.contains("@"))
        let expected = text.range(of: "://").map { text.utf8.distance(from: text.utf8.startIndex, to: $0.lowerBound) }
        #expect(UTF8Text.schemeSeparator(in: text) == expected)
        #expect(UTF8Text.contains(UInt8(ascii: ":"), followedBy: UInt8(ascii: "/"), in: text) == text.contains(":/"))
    }

    /// The byte scans of `OutputGuard` (a `/.` segment, the last `/`, a directory compared as bytes)
    /// agree with the string operations they replace.
    @Test(arguments: ["/tmp/out/a.json", "/tmp/out/./a", "/.x", ".", "/", "a/.", "./a", "no slash", "é/.ü/ñ", "", "/tmp/out/dir/",
                      "/tmp/out/some directory with a longer name/file.with.dots.bin"])
    func pathByteScansAgreeWithStringSearch(text: String) {
        #expect(UTF8Text.contains(UInt8(ascii: "/"), followedBy: UInt8(ascii: "."), in: text) == text.contains("/."))
        let expected = text.utf8.lastIndex(of: UInt8(ascii: "/")).map { text.utf8.distance(from: text.utf8.startIndex, to: $0) }
        #expect(UTF8Text.lastOffset(of: UInt8(ascii: "/"), in: text) == expected)
        for count in 0...text.utf8.count {
            let prefix = String(decoding: text.utf8.prefix(count), as: UTF8.self)
            guard prefix.utf8.count == count else { continue }  // cut inside a character
            #expect(UTF8Text.prefix(of: text, count: count, equals: prefix), "\(count)")
            #expect(!UTF8Text.prefix(of: text, count: count, equals: prefix + "x"), "\(count)")
            if count > 0 { #expect(!UTF8Text.prefix(of: text, count: count, equals: "#" + String(prefix.dropFirst())) || prefix.hasPrefix("#")) }
        }
        #expect(!UTF8Text.prefix(of: text, count: text.utf8.count + 1, equals: text + "/"))
    }

    /// Decimal digits appended in place (log lines, expanded job ids) read as `String(value)`
    /// does, after bytes already in the buffer, for every width and both signs.
    @Test func decimalsAppendAsStringsPrintThem() {
        var values: [Int64] = [0, 7, -1, 9, 10, -10, 42, 99, 100, 16_384, -2_147_483_648, .max, .min, .max - 1, .min + 1]
        var power: Int64 = 1
        for _ in 0..<18 { power *= 10; values += [power - 1, power, power + 1, -power] }
        for value in values {
            var bytes = Array("x=".utf8)
            UTF8Text.appendDecimal(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == "x=\(value)")
        }
    }

    /// IMF-fixdates read from fixed positions equal what the general parser (and `timegm`) make
    /// of them, over two centuries of random instants, leap days and month ends included.
    @Test func fixdatesParseAsTheGeneralParserDoes() {
        var generator = SystemRandomNumberGenerator()
        var instants: [Int] = (0..<2_000).map { _ in Int.random(in: -2_208_988_800...4_102_444_799, using: &generator) }
        // 1900-03-01, 2000-02-29, 2024-02-29 23:59:59, 2100-03-01, 1970-01-01, 1969-12-31 23:59:59.
        instants += [-2_203_891_200, 951_782_400, 1_709_251_199, 4_107_542_400, 0, -1]
        for seconds in instants {
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            let text = HTTPDate.format(date)
            #expect(HTTPDate.parse(text) == date, "\(text)")
            // The same instant in RFC 850 form goes through the general parser.
            let words = text.split(separator: " ")
            if seconds >= 0, seconds < 2_147_483_647, words.count == 6 {
                let year = Int(words[3])!
                if (1970...2069).contains(year) {
                    let rfc850 = "Sunday, \(words[1])-\(words[2])-\(String(words[3]).suffix(2)) \(words[4]) GMT"
                    #expect(HTTPDate.parse(rfc850) == date, "\(rfc850)")
                }
            }
        }
    }

    @Test(arguments: ["Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Nox 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:49:37 GMT",
                      "Sun, 06 Nov 1994 08:61:37 GMT", "Sun, 06 Nov 19a4 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 UTC",
                      "Sun, 06 Nov 1994 08:49:37 GM", "Sun, 06 Nov 1994 08:49 GMT"])
    func malformedFixdatesAreNotDates(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func monthNamesAnyCase() {
        #expect(HTTPDate.parse("Sun, 06 NOV 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse("Sun, 06 nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
    }

    /// A URL the shortcut takes as canonical is one the general canonicalization leaves alone, and
    /// every URL it declines is one that canonicalization changes (IP literals in brackets aside:
    /// the shortcut leaves them to the general code).
    @Test(arguments: ["http://example.com/a", "https://example.com:8443/x?y=1", "http://127.0.0.1:18731/fresh/0.bin",
                      "http://example.com:443/", "https://example.com:80/", "http://a-b.example/c/../d?q=a+b&r",
                      "HTTP://example.com/a", "http://Example.com/a", "http://example.com:80/a", "http://example.com:0080/a",
                      "http://example.com:/a", "http://example.com", "http://example.com?x", "http://u@example.com/",
                      "http://example.com/%7e", "http://example.com/a#f", "http://[::1]:8080/x", "https://example.com:443/"])
    func theCanonicalShortcutAgreesWithTheGeneralForm(text: String) {
        if CacheKey.isCanonical(text) {
            #expect(CacheKey.canonicalForm(text) == text)
        } else {
            #expect(CacheKey.canonicalForm(text) != text || text.contains("["), "\(text)")
        }
    }

    @Test func hexOfAnUInt64IsSixteenDigits() {
        for value: UInt64 in [0, 1, 0xff, 0x0123_4567_89ab_cdef, .max] + (0..<100).map({ _ in .random(in: .min ... .max) }) {
            #expect(Hex.string(value) == String(format: "%016llx", value))
        }
    }
}
