import Foundation
import Yams

/// Checks a param's value against its `ParamSpec`: type (text is converted where it reads as the
/// type, so `--param page=2` and `page: "2"` are integers), `enum`, `minimum`/`maximum`, `pattern`.
public enum ParamChecker {
    public struct Problem: Error, Sendable, Equatable {
        /// Reads after the param's name: "must be an integer, found 'abc'".
        public var message: String
    }

    public static func check(_ value: ParameterValue, against spec: ParamSpec) -> Result<ParameterValue, Problem> {
        let coerced: ParameterValue
        switch coerce(value, to: spec.type) {
        case .success(let v): coerced = v
        case .failure(let p): return .failure(p)
        }
        if let choices = spec.enumValues, !choices.contains(where: { same($0, coerced, as: spec.type) }) {
            return .failure(Problem(message: "must be one of \(choices.map(\.text).joined(separator: ", ")), found \(show(coerced))"))
        }
        if let number = numeric(coerced) {
            if let minimum = spec.minimum, number < minimum {
                return .failure(Problem(message: "must be at least \(JSONText.number(minimum)), found \(coerced.text)"))
            }
            if let maximum = spec.maximum, number > maximum {
                return .failure(Problem(message: "must be at most \(JSONText.number(maximum)), found \(coerced.text)"))
            }
        }
        if let pattern = spec.pattern, case .string(let text) = coerced,
           let regex = RegexCache.shared.regex(pattern),
           regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) == nil {
            return .failure(Problem(message: "must match the pattern \(pattern), found \(show(coerced))"))
        }
        return .success(coerced)
    }

    static func coerce(_ value: ParameterValue, to kind: ParamSpec.Kind) -> Result<ParameterValue, Problem> {
        let mismatch = Problem(message: "must be \(article(kind)), found \(show(value))")
        switch (kind, value) {
        case (.string, .string), (.integer, .int), (.number, .int), (.number, .double), (.boolean, .bool),
             (.array, .array), (.object, .object):
            return .success(value)
        case (.string, .int), (.string, .double), (.string, .bool):
            return .success(.string(value.text))
        case (.integer, .double(let d)) where d == d.rounded() && abs(d) < 9e15:
            return .success(.int(Int(d)))
        case (.integer, .string(let s)):
            return Int(s.trimmingCharacters(in: .whitespaces)).map { .success(.int($0)) } ?? .failure(mismatch)
        case (.number, .string(let s)):
            let t = s.trimmingCharacters(in: .whitespaces)
            if let i = Int(t) { return .success(.int(i)) }
            return Double(t).flatMap { $0.isFinite ? ParameterValue.double($0) : nil }.map { .success($0) } ?? .failure(mismatch)
        case (.boolean, .string(let s)):
            switch s.lowercased() {
            case "true", "yes", "on", "1": return .success(.bool(true))
            case "false", "no", "off", "0": return .success(.bool(false))
            default: return .failure(mismatch)
            }
        case (.array, .string(let s)), (.object, .string(let s)):
            guard let parsed = JSONValueParser.parse(s), (kind == .array) == (parsed.isArray) else { return .failure(mismatch) }
            if case .object = parsed, kind == .array { return .failure(mismatch) }
            return .success(parsed)
        default:
            return .failure(mismatch)
        }
    }

    private static func same(_ a: ParameterValue, _ b: ParameterValue, as kind: ParamSpec.Kind) -> Bool {
        if case .success(let ca) = coerce(a, to: kind) { return ca == b || ca.text == b.text }
        return a == b
    }

    private static func numeric(_ v: ParameterValue) -> Double? {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    static func show(_ v: ParameterValue) -> String {
        switch v {
        case .string(let s): return "'\(s)'"
        case .int, .double, .bool: return v.text
        default: return v.kindDescription
        }
    }

    static func article(_ kind: ParamSpec.Kind) -> String {
        switch kind {
        case .string: return "a string"
        case .integer: return "an integer"
        case .number: return "a number"
        case .boolean: return "a boolean"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

extension ParameterValue {
    var isArray: Bool { if case .array = self { true } else { false } }
}

/// Parses JSON (or YAML flow) text into a `ParameterValue`, object key order kept, for array and
/// object params given as text on the command line.
enum JSONValueParser {
    static func parse(_ text: String) -> ParameterValue? {
        guard let node = try? Yams.compose(yaml: text, .basic) else { return nil }
        return ParameterValue(plainNode: node)
    }
}

extension ParameterValue {
    /// The value of a YAML node with YAML's own typing of plain scalars and no `${VAR}` resolution.
    init(plainNode node: Node) {
        switch node {
        case .scalar(let scalar):
            if scalar.style == .plain || scalar.style == .any, let typed = PlainScalar.value(scalar.string) {
                self = typed
                return
            }
            self = .string(scalar.string)
        case .sequence(let sequence):
            self = .array(sequence.map(ParameterValue.init(plainNode:)))
        case .mapping(let mapping):
            self = .object(mapping.map { ParameterEntry(key: $0.key.string ?? "", value: ParameterValue(plainNode: $0.value)) })
        case .alias:
            self = .null
        }
    }
}
