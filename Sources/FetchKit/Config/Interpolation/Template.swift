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
        var parts: [Part] = []
        var rest = Substring(text)
        while let open = rest.range(of: "{{"), let close = rest[open.upperBound...].range(of: "}}") {
            let name = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            if !rest[..<open.lowerBound].isEmpty { parts.append(.literal(String(rest[..<open.lowerBound]))) }
            parts.append(.placeholder(name))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty || parts.isEmpty { parts.append(.literal(String(rest))) }
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
        parts.map { part in
            switch part {
            case .literal(let text): return text
            case .placeholder(let name): return value(name) ?? "{{\(name)}}"
            }
        }.joined()
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
