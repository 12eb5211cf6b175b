import Foundation

/// The URL part of a response cache key (RFC 9111 §2: the key is the method and the target URI),
/// in a canonical form so that URLs naming the same resource by RFC 3986 §6.2.2–6.2.3 share
/// their entries.
public enum CacheKey {
    /// `url` in canonical form: scheme and host lowercased (§6.2.2.1), userinfo dropped (it is
    /// not part of an HTTP target URI, RFC 9110 §4.2.4), an empty or default port dropped (80 for
    /// http, 443 for https, §6.2.3), an empty path as `/` (§6.2.3), percent-encodings in the
    /// host, path and query with upper-case hex and those of unreserved characters
    /// (`ALPHA DIGIT - . _ ~`) decoded (§6.2.2.1–6.2.2.2), the fragment dropped (it is never
    /// sent). The query is otherwise kept byte for byte: its order and `+` are the origin's to
    /// interpret, and a `?` with nothing after it stays. Dot segments are kept, as they are sent.
    public static func canonicalURL(_ url: URL) -> String {
        let absolute = url.absoluteString
        return isCanonical(absolute) ? absolute : canonicalForm(absolute)
    }

    /// `canonicalURL` without the fast path (the tests check the two agree).
    static func canonicalForm(_ absolute: String) -> String {
        var text = Substring(absolute)
        if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
        guard let colon = text.firstIndex(of: ":") else { return normalizePercentEncoding(text) }
        let scheme = text[..<colon].lowercased()
        var rest = text[text.index(after: colon)...]
        guard rest.hasPrefix("//") else { return scheme + ":" + normalizePercentEncoding(rest) }
        rest = rest.dropFirst(2)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        let pathAndQuery = rest[authorityEnd...]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let (host, port) = splitHostPort(authority)
        var result = scheme + "://" + normalizePercentEncoding(host.lowercased())
        if let port, !port.isEmpty {
            if let number = Int(port) {
                if number != defaultPort(scheme) { result += ":" + String(number) }
            } else {
                result += ":" + port
            }
        }
        if !pathAndQuery.hasPrefix("/") { result += "/" }
        return result + normalizePercentEncoding(pathAndQuery)
    }

    /// The common case, checked in one pass over the bytes: a lowercase `scheme://host/` with no
    /// userinfo, port, percent sign or fragment is canonical as it is.
    static func isCanonical(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var index = 0
            while index < bytes.count, bytes[index] != UInt8(ascii: ":") {
                let byte = bytes[index]
                guard (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) else { return false }
                index += 1
            }
            guard index > 0, index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") else { return false }
            let schemeEnd = index
            index += 3
            let hostStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: ":") {
                let byte = bytes[index]
                let allowed = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                guard allowed else { return false }  // userinfo, `[`, `%`, upper case, or `?` right after the host
                index += 1
            }
            guard index > hostStart, index < bytes.count else { return false }
            if bytes[index] == UInt8(ascii: ":") {  // a port: digits, no leading zero, not the scheme's default
                index += 1
                var port = 0, digits = 0
                while index < bytes.count, bytes[index] != UInt8(ascii: "/") {
                    let digit = Int(bytes[index]) - 48
                    guard (0...9).contains(digit), digits < 5, !(digits == 0 && digit == 0) else { return false }
                    port = port * 10 + digit
                    digits += 1
                    index += 1
                }
                let scheme = String(decoding: UnsafeBufferPointer(rebasing: bytes[0..<schemeEnd]), as: UTF8.self)
                guard digits > 0, index < bytes.count, port != defaultPort(scheme) else { return false }
            }
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "%") || bytes[index] == UInt8(ascii: "#") { return false }
                index += 1
            }
            return true
        }
    }

    /// Whether `a` and `b` have the same origin (RFC 6454 §4, RFC 9110 §4.3.1): scheme, host
    /// (both without case) and port, with a missing port taken as the scheme's default.
    public static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        guard let schemeA = a.scheme?.lowercased(), let schemeB = b.scheme?.lowercased(), schemeA == schemeB,
              let hostA = a.host?.lowercased(), let hostB = b.host?.lowercased(), hostA == hostB else { return false }
        return (a.port ?? defaultPort(schemeA)) == (b.port ?? defaultPort(schemeB))
    }

    static func defaultPort(_ scheme: String) -> Int? {
        switch scheme {
        case "http", "ws": 80
        case "https", "wss": 443
        default: nil
        }
    }

    /// Splits `host[:port]`, where the host may be an IP literal in brackets.
    private static func splitHostPort(_ authority: Substring) -> (host: Substring, port: Substring?) {
        let searchFrom = authority.hasPrefix("[") ? (authority.firstIndex(of: "]") ?? authority.startIndex) : authority.startIndex
        guard let colon = authority[searchFrom...].lastIndex(of: ":") else { return (authority, nil) }
        return (authority[..<colon], authority[authority.index(after: colon)...])
    }

    /// RFC 3986 §6.2.2.1–6.2.2.2: `%xx` in upper-case hex, and decoded when it encodes an
    /// unreserved character. A `%` not followed by two hex digits is left as it is.
    static func normalizePercentEncoding(_ text: some StringProtocol) -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return String(text) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                let decoded = high << 4 | low
                if isUnreserved(decoded) {
                    out.append(decoded)
                } else {
                    out += [UInt8(ascii: "%"), hexDigit(high), hexDigit(low)]
                }
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 §2.3).
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
        }
    }
}
