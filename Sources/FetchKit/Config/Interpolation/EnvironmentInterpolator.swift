/// Resolves `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?message}` and `${VAR?message}` in a
/// string, docker-compose style; `$$` is a literal `$`.
///
/// Values of variables named like a secret (`*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*KEY*`) are reported
/// so every output can redact them.
public struct EnvironmentInterpolator: Sendable {
    public let environment: [String: String]
    /// An unset variable without a default reads as `<unset: NAME>` instead of nothing (a dry run's plan).
    public let marksUnset: Bool

    public init(environment: [String: String], marksUnset: Bool = false) {
        self.environment = environment
        self.marksUnset = marksUnset
    }

    /// What an unset variable reads as when `marksUnset`.
    public static func unsetMarker(_ name: String) -> String { "<unset: \(name)>" }

    /// What resolving one string found.
    public struct Result: Sendable, Equatable {
        public var text: String
        /// Variables that were unset with no default (and their `:?` message, if any).
        public var missing: [(name: String, message: String?)] = []
        /// Resolved values of secret-named variables.
        public var secrets: [String] = []
        /// A syntax problem such as an unterminated `${`.
        public var syntaxError: String?

        /// True when the text could not be fully resolved (a value check on it would be meaningless).
        public var isIncomplete: Bool { !missing.isEmpty || syntaxError != nil }

        public static func == (lhs: Result, rhs: Result) -> Bool {
            lhs.text == rhs.text && lhs.secrets == rhs.secrets && lhs.syntaxError == rhs.syntaxError
                && lhs.missing.map(\.name) == rhs.missing.map(\.name)
        }
    }

    /// True when a variable's value must be redacted.
    public static func isSecretName(_ name: String) -> Bool {
        let upper = name.uppercased()
        return ["TOKEN", "SECRET", "PASSWORD", "KEY"].contains { upper.contains($0) }
    }

    public func resolve(_ input: String) -> Result {
        guard input.contains("$") else { return Result(text: input) }
        var result = Result(text: "")
        var rest = Substring(input)
        while let dollar = rest.firstIndex(of: "$") {
            result.text += rest[..<dollar]
            let after = rest.index(after: dollar)
            if after < rest.endIndex, rest[after] == "$" {
                result.text += "$"
                rest = rest[rest.index(after: after)...]
                continue
            }
            guard after < rest.endIndex, rest[after] == "{" else {
                result.text += "$"
                rest = rest[after...]
                continue
            }
            guard let close = rest[after...].firstIndex(of: "}") else {
                result.syntaxError = "unterminated '${' (close it with '}', or write '$$' for a literal '$')"
                result.text += rest[dollar...]
                return result
            }
            let body = rest[rest.index(after: after)..<close]
            rest = rest[rest.index(after: close)...]
            resolveReference(String(body), into: &result)
        }
        result.text += rest
        return result
    }

    private func resolveReference(_ body: String, into result: inout Result) {
        var name = body
        var fallback: String?
        var requiredMessage: String?
        var emptyCountsAsUnset = false
        for (op, isDefault) in [(":-", true), (":?", false), ("-", true), ("?", false)] {
            if let range = body.range(of: op) {
                name = String(body[..<range.lowerBound])
                let operand = String(body[range.upperBound...])
                if isDefault { fallback = operand } else { requiredMessage = operand }
                emptyCountsAsUnset = op.hasPrefix(":")
                break
            }
        }
        guard isValidName(name) else {
            result.syntaxError = "'${\(body)}' is not a variable reference (names are letters, digits and '_')"
            return
        }
        var value = environment[name]
        if emptyCountsAsUnset, value?.isEmpty == true { value = nil }
        if let value {
            result.text += value
            if Self.isSecretName(name), !value.isEmpty { result.secrets.append(value) }
        } else if let fallback {
            result.text += fallback
        } else {
            result.missing.append((name, requiredMessage.flatMap { $0.isEmpty ? nil : $0 }))
            if marksUnset { result.text += Self.unsetMarker(name) }
        }
    }

    private func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else {
            return false
        }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }
}
