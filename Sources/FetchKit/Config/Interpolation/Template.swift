/// A string with `{{name}}` / `{{matrix.key}}` placeholders, split into literal and placeholder parts.
public struct Template: Sendable, Equatable {
    public enum Part: Sendable, Equatable {
        case literal(String)
        case placeholder(String)
    }

    public let parts: [Part]

    public init(_ text: String) {
        // Most strings have no placeholder: skip the search (this runs for every value of every job).
        guard Self.mayContainPlaceholder(text) else {
            parts = [.literal(text)]
            return
        }
        // A byte scan: `{{` and `}}` are ASCII, so UTF-8 offsets are always character boundaries here.
        var parts: [Part] = []
        let bytes = Array(text.utf8)
        var literalStart = 0
        var index = 0
        func string(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        while index + 1 < bytes.count {
            guard bytes[index] == UInt8(ascii: "{"), bytes[index + 1] == UInt8(ascii: "{") else { index += 1; continue }
            var close = index + 2
            while close + 1 < bytes.count, !(bytes[close] == UInt8(ascii: "}") && bytes[close + 1] == UInt8(ascii: "}")) { close += 1 }
            guard close + 1 < bytes.count else { break }  // no closing `}}`: the rest is literal
            if literalStart < index { parts.append(.literal(string(literalStart..<index))) }
            var nameStart = index + 2, nameEnd = close
            while nameStart < nameEnd, bytes[nameStart] == UInt8(ascii: " ") || bytes[nameStart] == UInt8(ascii: "\t") { nameStart += 1 }
            while nameEnd > nameStart, bytes[nameEnd - 1] == UInt8(ascii: " ") || bytes[nameEnd - 1] == UInt8(ascii: "\t") { nameEnd -= 1 }
            parts.append(.placeholder(string(nameStart..<nameEnd)))
            index = close + 2
            literalStart = index
        }
        if literalStart < bytes.count || parts.isEmpty { parts.append(.literal(string(literalStart..<bytes.count))) }
        self.parts = parts
    }

    static func mayContainPlaceholder(_ text: String) -> Bool {
        var previousWasBrace = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: "{") {
                if previousWasBrace { return true }
                previousWasBrace = true
            } else {
                previousWasBrace = false
            }
        }
        return false
    }

    /// The placeholder names, in order of appearance.
    public var placeholders: [String] {
        parts.compactMap { if case .placeholder(let name) = $0 { return name } else { return nil } }
    }

    /// The name when the whole string is exactly one placeholder (its value then keeps its type).
    public var solePlaceholder: String? {
        if parts.count == 1, case .placeholder(let name) = parts[0] { return name }
        return nil
    }

    public var hasPlaceholders: Bool { parts.contains { if case .placeholder = $0 { true } else { false } } }

    /// Substitutes each placeholder with `value(name)`; a nil value leaves the placeholder text as written.
    public func render(_ value: (String) -> String?) -> String {
        var result = ""
        for part in parts {
            switch part {
            case .literal(let text): result += text
            case .placeholder(let name):
                if let text = value(name) { result += text } else { result += "{{" + name + "}}" }
            }
        }
        return result
    }

    /// True when `name` is a valid placeholder name (`param` or `matrix.key`).
    public static func isValidName(_ name: String) -> Bool {
        let pieces = name.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count == 1 || (pieces.count == 2 && pieces[0] == "matrix") else { return false }
        return pieces.allSatisfy { piece in
            guard let first = piece.unicodeScalars.first, first == "_" || first.properties.isAlphabetic else { return false }
            return piece.unicodeScalars.allSatisfy { $0 == "_" || $0 == "-" || $0.properties.isAlphabetic || ("0"..."9").contains($0) }
        }
    }
}
