import Foundation

/// Encodes a `ParameterValue` as compact JSON, byte for byte what Alamofire's
/// `JSONParameterEncoder.sortedKeys` (Foundation's `JSONEncoder` with `.sortedKeys`) writes.
///
/// With `sortedKeys: false` object keys keep the order they were written in the YAML.
public struct JSONParameterEncoder: Sendable, Equatable {
    public var sortedKeys: Bool

    public init(sortedKeys: Bool = true) {
        self.sortedKeys = sortedKeys
    }

    public func encode(_ value: ParameterValue) throws -> Data {
        Data(encodeToString(value).utf8)
    }

    /// The JSON text for `value`.
    public func encodeToString(_ value: ParameterValue) -> String {
        var out = ""
        write(value, into: &out)
        return out
    }

    private func write(_ value: ParameterValue, into out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += JSONText.number(d)
        case .string(let s): out += JSONText.quote(s)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                write(item, into: &out)
            }
            out += "]"
        case .object(let entries):
            // JSONEncoder sorts keys by their UTF-8 bytes; a later duplicate key wins, as in a dictionary.
            var unique: [ParameterEntry] = []
            for entry in entries {
                if let index = unique.firstIndex(where: { $0.key == entry.key }) { unique[index] = entry } else { unique.append(entry) }
            }
            let ordered = sortedKeys ? unique.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) } : unique
            out += "{"
            for (index, entry) in ordered.enumerated() {
                if index > 0 { out += "," }
                out += JSONText.quote(entry.key)
                out += ":"
                write(entry.value, into: &out)
            }
            out += "}"
        }
    }
}
