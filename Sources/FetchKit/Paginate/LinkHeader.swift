/// The links of `Link` header fields (RFC 8288 §3): `<uri-reference>; rel="next"; …`, several per
/// field separated by commas (which may also appear inside the `<…>`), several fields per response.
public enum LinkHeader {
    public struct Link: Sendable, Equatable {
        /// The target as written (a URI reference: resolve it against the request's URL).
        public var target: String
        /// The relation types, lowercased (`rel="next last"` is two).
        public var relations: [String]
    }

    /// Every link of `values` (the field values, in order). Malformed links are skipped, as
    /// browsers and curl do, rather than failing the page.
    public static func links(in values: [String]) -> [Link] {
        values.flatMap(parse)
    }

    /// The target of the first link whose relation types include `relation` (case-insensitive).
    public static func target(rel relation: String, in values: [String]) -> String? {
        let wanted = relation.lowercased()
        return links(in: values).first { $0.relations.contains(wanted) }?.target
    }

    static func parse(_ value: String) -> [Link] {
        let chars = Array(value.unicodeScalars)
        var i = 0
        var links: [Link] = []
        func skipSpace() { while i < chars.count, chars[i] == " " || chars[i] == "\t" { i += 1 } }
        while i < chars.count {
            skipSpace()
            if i < chars.count, chars[i] == "," { i += 1; continue }
            guard i < chars.count, chars[i] == "<" else {
                // Not a link: skip to the next comma outside quotes.
                var quoted = false
                while i < chars.count, quoted || chars[i] != "," {
                    if chars[i] == "\"" { quoted.toggle() }
                    i += 1
                }
                continue
            }
            i += 1
            let start = i
            while i < chars.count, chars[i] != ">" { i += 1 }
            guard i < chars.count else { break }
            var target = String.UnicodeScalarView()
            target.append(contentsOf: chars[start..<i])
            i += 1
            var relations: [String] = []
            // Parameters: `; name=value` or `; name="quoted"` until the next comma.
            while true {
                skipSpace()
                guard i < chars.count, chars[i] == ";" else { break }
                i += 1
                skipSpace()
                let nameStart = i
                while i < chars.count, chars[i] != "=", chars[i] != ";", chars[i] != ",", chars[i] != " " { i += 1 }
                var name = String.UnicodeScalarView()
                name.append(contentsOf: chars[nameStart..<i])
                skipSpace()
                var parameter = ""
                if i < chars.count, chars[i] == "=" {
                    i += 1
                    skipSpace()
                    var text = String.UnicodeScalarView()
                    if i < chars.count, chars[i] == "\"" {
                        i += 1
                        while i < chars.count, chars[i] != "\"" {
                            if chars[i] == "\\", i + 1 < chars.count { i += 1 }
                            text.append(chars[i])
                            i += 1
                        }
                        i += 1
                    } else {
                        while i < chars.count, chars[i] != ";", chars[i] != ",", chars[i] != " " { text.append(chars[i]); i += 1 }
                    }
                    parameter = String(text)
                }
                // Only the first `rel` counts (RFC 8288 §3.3).
                if String(name).lowercased() == "rel", relations.isEmpty {
                    relations = parameter.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                }
            }
            links.append(Link(target: String(target).trimmingSpaces, relations: relations))
            skipSpace()
            // Anything else up to the comma that ends this link is not part of the grammar: skip it.
            while i < chars.count, chars[i] != "," { i += 1 }
        }
        return links
    }
}

private extension String {
    var trimmingSpaces: String {
        var scalars = Substring(self).unicodeScalars
        while scalars.first == " " { scalars.removeFirst() }
        while scalars.last == " " { scalars.removeLast() }
        return String(scalars)
    }
}
