/// A JSONPath query (RFC 9535), the one path language of `paginate`, captures and fan-out: parsed
/// once when the config is loaded, evaluated against every page.
///
/// The subset: the root `$`; child segments `.name`, `.*` and `[…]`; descendant segments `..name`,
/// `..*` and `..[…]`; inside brackets, comma-separated names (`'a'` or `"a"`), indexes (negative
/// from the end), `*` and slices `start:end:step`. Filters (`[?…]`) and functions are not part of
/// it: `JSONPath(parsing:)` says so, with the column.
public struct JSONPath: Sendable, Equatable, CustomStringConvertible {
    public enum Selector: Sendable, Equatable {
        case name(String)
        case wildcard
        case index(Int)
        case slice(start: Int?, end: Int?, step: Int?)
    }

    public struct Segment: Sendable, Equatable {
        /// `..`: the selectors apply to the node and every node below it.
        public var descendant: Bool
        public var selectors: [Selector]
    }

    /// The query as written.
    public let text: String
    public let segments: [Segment]

    public var description: String { text }

    /// True when the query can select at most one node (names and indexes only, RFC 9535 §2.3.5.1's
    /// singular query): then `items` on an array means its elements.
    public var isSingular: Bool {
        segments.allSatisfy { segment in
            !segment.descendant && segment.selectors.count == 1
                && { if case .name = segment.selectors[0] { true } else if case .index = segment.selectors[0] { true } else { false } }()
        }
    }

    public init(parsing text: String) throws(JSONPathError) {
        self.text = text
        var parser = JSONPathParser(text: text)
        segments = try parser.parse()
    }

    /// The nodes the query selects, in document order.
    public func select(in root: JSONValue) -> [JSONValue] {
        var nodes = [root]
        for segment in segments {
            var next: [JSONValue] = []
            for node in nodes {
                if segment.descendant {
                    Self.visitDescendants(of: node) { Self.apply(segment.selectors, to: $0, into: &next) }
                } else {
                    Self.apply(segment.selectors, to: node, into: &next)
                }
            }
            nodes = next
            if nodes.isEmpty { break }
        }
        return nodes
    }

    /// The first node the query selects; nil when it selects none.
    public func first(in root: JSONValue) -> JSONValue? { select(in: root).first }

    /// The records `items: PATH` names: the elements of the array a singular query reaches, or
    /// every match of one that has wildcards, slices or descendants.
    public func records(in root: JSONValue) -> [JSONValue] {
        let nodes = select(in: root)
        if isSingular, nodes.count == 1, case .array(let elements) = nodes[0] { return elements }
        return nodes
    }

    private static func visitDescendants(of node: JSONValue, _ body: (JSONValue) -> Void) {
        body(node)
        switch node {
        case .array(let items): for item in items { visitDescendants(of: item, body) }
        case .object(let members): for member in members { visitDescendants(of: member.value, body) }
        default: break
        }
    }

    private static func apply(_ selectors: [Selector], to node: JSONValue, into out: inout [JSONValue]) {
        for selector in selectors {
            switch (selector, node) {
            case (.name(let name), .object(let members)):
                if let member = members.first(where: { $0.key == name }) { out.append(member.value) }
            case (.wildcard, .object(let members)):
                out += members.map(\.value)
            case (.wildcard, .array(let items)):
                out += items
            case (.index(let index), .array(let items)):
                let resolved = index < 0 ? items.count + index : index
                if resolved >= 0, resolved < items.count { out.append(items[resolved]) }
            case (.slice(let start, let end, let step), .array(let items)):
                out += slice(items, start: start, end: end, step: step ?? 1)
            default:
                break
            }
        }
    }

    /// RFC 9535 §2.3.4.2.2: normalized bounds, either direction, nothing for step 0.
    private static func slice(_ items: [JSONValue], start: Int?, end: Int?, step: Int) -> [JSONValue] {
        let count = items.count
        guard step != 0, count > 0 else { return [] }
        func normalize(_ i: Int) -> Int { i >= 0 ? i : count + i }
        var out: [JSONValue] = []
        if step > 0 {
            let lower = min(max(normalize(start ?? 0), 0), count)
            let upper = min(max(normalize(end ?? count), 0), count)
            var i = lower
            while i < upper {
                out.append(items[i])
                let (next, overflow) = i.addingReportingOverflow(step)
                if overflow { break }
                i = next
            }
        } else {
            let upper = min(max(start.map(normalize) ?? count - 1, -1), count - 1)
            let lower = min(max(end.map(normalize) ?? -count - 1, -1), count - 1)
            var i = upper
            while lower < i {
                out.append(items[i])
                let (next, overflow) = i.addingReportingOverflow(step)
                if overflow { break }
                i = next
            }
        }
        return out
    }
}

/// A query that is not JSONPath (or not the subset): what is wrong and at which character
/// (0-based) of the query, so diagnostics can point at it.
public struct JSONPathError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    public var hint: String?
    public var description: String { message }
}

private struct JSONPathParser {
    let characters: [Character]
    var index = 0

    init(text: String) { characters = Array(text) }

    func error(_ message: String, hint: String? = nil) -> JSONPathError { JSONPathError(message: message, offset: index, hint: hint) }

    var current: Character? { index < characters.count ? characters[index] : nil }

    mutating func parse() throws(JSONPathError) -> [JSONPath.Segment] {
        guard current == "$" else {
            throw error("a JSONPath starts with '$'", hint: characters.first == "." || characters.first == "["
                        ? "write $\(String(characters))" : "write $.\(String(characters))")
        }
        index += 1
        var segments: [JSONPath.Segment] = []
        while let c = current {
            if c == " " || c == "\t" { index += 1; continue }
            if c == "." {
                index += 1
                if current == "." {
                    index += 1
                    if current == "." {
                        throw error("three dots in a row", hint: "'..' selects descendants: write ..name")
                    }
                    if current == "[" {
                        segments.append(.init(descendant: true, selectors: try bracket()))
                    } else {
                        segments.append(.init(descendant: true, selectors: [try shorthand()]))
                    }
                } else {
                    segments.append(.init(descendant: false, selectors: [try shorthand()]))
                }
            } else if c == "[" {
                segments.append(.init(descendant: false, selectors: try bracket()))
            } else {
                throw error("unexpected '\(c)'", hint: "segments are .name, .*, ..name or [selectors]")
            }
        }
        return segments
    }

    /// `name` or `*` after `.` or `..`.
    mutating func shorthand() throws(JSONPathError) -> JSONPath.Selector {
        if current == "*" { index += 1; return .wildcard }
        let start = index
        // RFC 9535 member-name-shorthand: a letter, '_' or any non-ASCII character, then digits too.
        while let c = current, c == "_" || c.isLetter || !c.isASCII || (index > start && c.isASCII && c.isWholeNumber) {
            index += 1
        }
        guard index > start else {
            if current == nil { throw error("the path ends after '.'") }
            throw error("a name after '.' starts with a letter or '_'", hint: "quote other names: ['\(current.map(String.init) ?? "")…']")
        }
        return .name(String(characters[start..<index]))
    }

    mutating func skipSpaces() {
        while let c = current, c == " " || c == "\t" || c == "\n" || c == "\r" { index += 1 }
    }

    /// `[sel, sel, …]`
    mutating func bracket() throws(JSONPathError) -> [JSONPath.Selector] {
        index += 1
        var selectors: [JSONPath.Selector] = []
        while true {
            skipSpaces()
            selectors.append(try selector())
            skipSpaces()
            guard let c = current else { throw error("a '[' is not closed", hint: "end the selectors with ']'") }
            index += 1
            if c == "]" { return selectors }
            guard c == "," else { index -= 1; throw error("expected ',' or ']'") }
        }
    }

    mutating func selector() throws(JSONPathError) -> JSONPath.Selector {
        guard let c = current else { throw error("a '[' is not closed", hint: "end the selectors with ']'") }
        switch c {
        case "'", "\"": return .name(try quoted(c))
        case "*": index += 1; return .wildcard
        case "?": throw error("filter selectors ([?…]) are not supported", hint: "select with names, indexes, '*' and slices")
        default:
            let first = try integer()
            skipSpaces()
            guard current == ":" else {
                guard let first else { throw error("expected a name in quotes, an index, '*' or a slice") }
                return .index(first)
            }
            index += 1
            skipSpaces()
            let end = try integer()
            skipSpaces()
            var step: Int?
            if current == ":" {
                index += 1
                skipSpaces()
                step = try integer()
            }
            return .slice(start: first, end: end, step: step)
        }
    }

    /// An optional integer (RFC 9535: `-`? digits, no leading zeros but `0`).
    mutating func integer() throws(JSONPathError) -> Int? {
        let start = index
        if current == "-" { index += 1 }
        let digitsStart = index
        while let c = current, c.isASCII, c.isWholeNumber { index += 1 }
        if index == digitsStart {
            if index > start { throw error("expected a digit after '-'") }
            return nil
        }
        if characters[digitsStart] == "0", index - digitsStart > 1 { throw error("an index has no leading zeros") }
        // RFC 9535 §2.1: integers within ±(2^53 − 1), the range JSON numbers share across languages.
        guard let value = Int(String(characters[start..<index])), abs(value) <= (1 << 53) - 1 else {
            throw error("the index is too large", hint: "indexes and slice bounds are within ±9007199254740991")
        }
        return value
    }

    mutating func quoted(_ quote: Character) throws(JSONPathError) -> String {
        index += 1
        var out = ""
        while let c = current {
            index += 1
            if c == quote { return out }
            if c == "\\" {
                guard let e = current else { break }
                index += 1
                switch e {
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                case "b": out.append("\u{08}")
                case "f": out.append("\u{0C}")
                case "/", "\\", "'", "\"": out.append(e)
                case "u":
                    guard index + 4 <= characters.count, let code = UInt32(String(characters[index..<index + 4]), radix: 16),
                          let scalar = Unicode.Scalar(code) else { throw error("an invalid \\u escape") }
                    index += 4
                    out.unicodeScalars.append(scalar)
                default: throw error("an invalid escape '\\\(e)'")
                }
            } else {
                out.append(c)
            }
        }
        throw error("a quoted name is not closed", hint: "end it with \(quote)")
    }
}
