/// A parameter value as a route or job gives it: the JSON data model, with object keys kept in the
/// order they were written (encoders sort them when `sort_keys` is on, Alamofire's default).
///
/// Not `indirect`: its recursion goes through arrays, which are references already, and an
/// indirect enum boxes every value on the heap (an allocation for each matrix value, param and
/// template context entry a job).
public enum ParameterValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([ParameterValue])
    case object([ParameterEntry])

    /// The value as text, as it lands in a URL, a header or a longer string.
    public var text: String {
        switch self {
        case .null: return ""
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .string(let s): return s
        case .array, .object: return JSONParameterEncoder(sortedKeys: false).encodeToString(self)
        }
    }

    /// A short name of the kind of value, for diagnostics ("a string", "an array").
    public var kindDescription: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int: return "an integer"
        case .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// The entry named `key`, when this is an object.
    public subscript(key: String) -> ParameterValue? {
        guard case .object(let entries) = self else { return nil }
        return entries.first { $0.key == key }?.value
    }
}

/// One key of an object `ParameterValue`.
public struct ParameterEntry: Sendable, Equatable {
    public var key: String
    public var value: ParameterValue

    public init(key: String, value: ParameterValue) {
        self.key = key
        self.value = value
    }
}

extension ParameterValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: ParameterValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, ParameterValue)...) {
        self = .object(elements.map { ParameterEntry(key: $0.0, value: $0.1) })
    }
}
