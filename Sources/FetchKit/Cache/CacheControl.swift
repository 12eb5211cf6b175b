import Foundation

/// The directives of a message's `Cache-Control` field (RFC 9111 §5.2), parsed once so the cache
/// rules (`CacheRules`, `CacheFreshness`) read typed values instead of strings.
///
/// Every `Cache-Control` field line of the message counts: the lines form one list (RFC 9110
/// §5.3), so `Cache-Control: max-age=60` followed by `Cache-Control: no-cache` is the same as
/// `Cache-Control: max-age=60, no-cache`. The grammar is RFC 9111 §5.2's
/// `cache-directive = token [ "=" ( token / quoted-string ) ]`, read leniently: names compare
/// without case, whitespace around `=` and commas is skipped, empty list elements are ignored,
/// quoted arguments may hold commas and `\"` escapes, and a directive that can't be read is
/// skipped up to the next comma outside quotes. Unknown directives are kept in `extensions` and
/// otherwise ignored (§5.2.3).
///
/// How the ambiguous cases are settled (RFC 9111 §4.2.1 lets a cache choose):
/// - `max-age` (and `s-maxage`) given more than once with different values, or with an argument
///   that is not delta-seconds (§1.2.2), makes the message's freshness invalid: `maxAge` is 0 and
///   `hasInvalidFreshness` is set, so the response is stale ("the response should be considered
///   stale"). Repeating the same value is harmless.
/// - Other directives given more than once keep their most restrictive value: the smallest
///   `max-stale`, `stale-if-error` and `stale-while-revalidate`, the largest `min-fresh`. An
///   invalid argument to one of these ignores that occurrence.
/// - Conflicting directives are not resolved here but by the rules, and the most restrictive one
///   wins there: `no-cache` beats `max-age`, `no-store` beats everything, `must-revalidate` beats
///   `stale-if-error`.
/// - `no-cache="Set-Cookie"` (the qualified form, §5.2.2.4) is treated as a plain `no-cache` for
///   the whole response, which §5.2.2.4 notes is what caches commonly do; the names are kept in
///   `noCacheFields`. `private="…"` is a plain `private`, which a private cache ignores (§5.2.2.7).
public struct CacheControl: Sendable, Equatable {
    /// A directive this type has no property for (RFC 9111 §5.2.3 cache extensions).
    public struct Directive: Sendable, Equatable {
        /// Lowercased.
        public var name: String
        /// The argument without quotes or escapes; nil when the directive has none.
        public var value: String?

        public init(name: String, value: String? = nil) {
            self.name = name
            self.value = value
        }
    }

    /// The largest delta-seconds kept (2^31): greater values, including ones too large to
    /// represent, are read as this (RFC 9111 §1.2.2).
    public static let maxDeltaSeconds: TimeInterval = 2_147_483_648

    /// `max-age` (request §5.2.1.1, response §5.2.2.1); 0 when `hasInvalidFreshness`.
    public var maxAge: TimeInterval?
    /// `s-maxage` (§5.2.2.10): parsed, but ignored by a private cache.
    public var sharedMaxAge: TimeInterval?
    /// `max-stale` (request, §5.2.1.2); `.infinity` without an argument ("any staleness").
    public var maxStale: TimeInterval?
    /// `min-fresh` (request, §5.2.1.3).
    public var minFresh: TimeInterval?
    /// `stale-if-error` (RFC 5861 §4), request or response.
    public var staleIfError: TimeInterval?
    /// `stale-while-revalidate` (RFC 5861 §3), response; parsed for completeness.
    public var staleWhileRevalidate: TimeInterval?
    /// `no-cache`, qualified or not (§5.2.1.4, §5.2.2.4); on a request also `Pragma: no-cache`.
    public var noCache = false
    /// The field names of a qualified `no-cache="…"`, lowercased (informational: see the type).
    public var noCacheFields: [String] = []
    /// `no-store` (§5.2.1.5, §5.2.2.5).
    public var noStore = false
    /// `must-revalidate` (§5.2.2.2).
    public var mustRevalidate = false
    /// `proxy-revalidate` (§5.2.2.8): for shared caches only, ignored.
    public var proxyRevalidate = false
    /// `private` (§5.2.2.7).
    public var isPrivate = false
    /// `public` (§5.2.2.9).
    public var isPublic = false
    /// `must-understand` (§5.2.2.3).
    public var mustUnderstand = false
    /// `no-transform` (§5.2.1.6, §5.2.2.6).
    public var noTransform = false
    /// `immutable` (RFC 8246).
    public var immutable = false
    /// `only-if-cached` (request, §5.2.1.7).
    public var onlyIfCached = false
    /// Set when `max-age` was invalid or given twice with different values (see the type).
    public var hasInvalidFreshness = false
    /// Directives not listed above, in order.
    public var extensions: [Directive] = []

    /// No directives.
    public init() {}

    /// The directives of every `Cache-Control` field line of `headers` (a response's, or a
    /// request's without the `Pragma` fallback).
    public init(_ headers: HTTPHeaders) {
        self.init(lines: headers.values(for: "Cache-Control"))
    }

    /// A request's directives: its `Cache-Control` lines, or when it has none, `Pragma: no-cache`
    /// read as `Cache-Control: no-cache` (RFC 7234 §5.4; RFC 9111 §5.4 deprecates `Pragma` but
    /// HTTP/1.0-era clients still send it). `Pragma` is never read on a response: its meaning
    /// there was never specified (RFC 9111 §5.4).
    public init(request headers: HTTPHeaders) {
        // Most requests carry neither field: one pass over the fields says so (this runs twice for
        // every request the cache sees).
        var hasCacheControl = false, hasPragma = false
        headers.forEachField { name, _ in
            if HTTPHeaders.sameName(name, "Cache-Control") { hasCacheControl = true } else if HTTPHeaders.sameName(name, "Pragma") { hasPragma = true }
        }
        guard hasCacheControl || hasPragma else {
            self.init()
            return
        }
        self.init(headers)
        guard !hasCacheControl else { return }
        let pragmas = headers.values(for: "Pragma")
        if pragmas.contains(where: { line in Self.parse(line).contains { $0.name == "no-cache" } }) {
            noCache = true
        }
    }

    /// The directives of one `Cache-Control` field value.
    public init(parsing fieldValue: String) {
        self.init(lines: [fieldValue])
    }

    private init(lines: some Sequence<String>) {
        var maxAges: [TimeInterval?] = []
        var sharedMaxAges: [TimeInterval?] = []
        for line in lines {
            for raw in Self.parse(line) {
                apply(raw, maxAges: &maxAges, sharedMaxAges: &sharedMaxAges)
            }
        }
        // §4.2.1: an invalid value, or several different ones, make the response stale.
        if let first = maxAges.first {
            if let first, maxAges.allSatisfy({ $0 == first }) {
                maxAge = first
            } else {
                maxAge = 0
                hasInvalidFreshness = true
            }
        }
        if let first = sharedMaxAges.first {
            sharedMaxAge = sharedMaxAges.allSatisfy({ $0 == first }) ? first : 0
        }
    }

    private mutating func apply(_ raw: RawDirective, maxAges: inout [TimeInterval?], sharedMaxAges: inout [TimeInterval?]) {
        let seconds = raw.valid ? raw.value.flatMap(Self.deltaSeconds) : nil
        switch raw.name {
        case "max-age": maxAges.append(seconds)
        case "s-maxage": sharedMaxAges.append(seconds)
        case "max-stale":
            if raw.value == nil && raw.valid {
                maxStale = maxStale ?? .infinity
            } else if let seconds {
                maxStale = min(maxStale ?? .infinity, seconds)
            }
        case "min-fresh": if let seconds { minFresh = max(minFresh ?? 0, seconds) }
        case "stale-if-error": if let seconds { staleIfError = min(staleIfError ?? .infinity, seconds) }
        case "stale-while-revalidate": if let seconds { staleWhileRevalidate = min(staleWhileRevalidate ?? .infinity, seconds) }
        case "no-cache":
            noCache = true
            if let value = raw.value {
                noCacheFields += value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
            }
        case "no-store": noStore = true
        case "must-revalidate": mustRevalidate = true
        case "proxy-revalidate": proxyRevalidate = true
        case "private": isPrivate = true
        case "public": isPublic = true
        case "must-understand": mustUnderstand = true
        case "no-transform": noTransform = true
        case "immutable": immutable = true
        case "only-if-cached": onlyIfCached = true
        default: extensions.append(Directive(name: raw.name, value: raw.value))
        }
    }

    /// Delta-seconds (RFC 9111 §1.2.2): one or more ASCII digits, read as at most 2^31; nil for
    /// anything else (a sign, a fraction, spaces inside, an empty string).
    static func deltaSeconds(_ text: String) -> TimeInterval? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = min(value * 10 + Int64(byte - UInt8(ascii: "0")), Int64(maxDeltaSeconds))
        }
        return TimeInterval(value)
    }

    // MARK: Parsing

    /// One list element as read: `valid` is false when something other than whitespace followed
    /// the directive before the next comma (`max-age=5 6`), so its argument can't be trusted.
    struct RawDirective: Equatable {
        var name: String
        var value: String?
        var valid: Bool
    }

    /// The list elements of one field line (RFC 9110 §5.6.1), each as a directive.
    static func parse(_ line: String) -> [RawDirective] {
        var scanner = FieldScanner(bytes: Array(line.utf8))
        var result: [RawDirective] = []
        while !scanner.atEnd {
            scanner.skipWhitespace()
            if scanner.consume(UInt8(ascii: ",")) { continue }
            let name = scanner.token()
            guard !name.isEmpty else {  // not a token: skip the element
                scanner.skipElement()
                continue
            }
            var directive = RawDirective(name: name.lowercased(), value: nil, valid: true)
            scanner.skipWhitespace()
            if scanner.consume(UInt8(ascii: "=")) {
                scanner.skipWhitespace()
                if let quoted = scanner.quotedString() {
                    directive.value = quoted
                } else {
                    let token = scanner.token()
                    directive.value = token
                    if token.isEmpty { directive.valid = false }  // `max-age=` or `max-age=@`
                }
                scanner.skipWhitespace()
            }
            if !scanner.atEnd && !scanner.consume(UInt8(ascii: ",")) {
                directive.valid = false
                scanner.skipElement()
            }
            result.append(directive)
        }
        return result
    }

    /// A cursor over a field line's bytes.
    struct FieldScanner {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index >= bytes.count }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard !atEnd, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func skipWhitespace() {
            while !atEnd, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
        }

        /// tchar (RFC 9110 §5.6.2).
        static func isTokenByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
                 UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
                 UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
            default: false
            }
        }

        mutating func token() -> String {
            let start = index
            while !atEnd, Self.isTokenByte(bytes[index]) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// A quoted-string (RFC 9110 §5.6.4) without its quotes and escapes; nil when the cursor
        /// is not at a `"`. An unterminated string runs to the end of the line.
        mutating func quotedString() -> String? {
            guard consume(UInt8(ascii: "\"")) else { return nil }
            var out: [UInt8] = []
            while !atEnd {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "\"") { break }
                if byte == UInt8(ascii: "\\"), !atEnd {
                    out.append(bytes[index])
                    index += 1
                } else {
                    out.append(byte)
                }
            }
            return String(decoding: out, as: UTF8.self)
        }

        /// Moves past the next comma that is not inside a quoted-string.
        mutating func skipElement() {
            while !atEnd {
                if bytes[index] == UInt8(ascii: "\"") {
                    _ = quotedString()
                } else {
                    index += 1
                    if bytes[index - 1] == UInt8(ascii: ",") { return }
                }
            }
        }
    }
}
