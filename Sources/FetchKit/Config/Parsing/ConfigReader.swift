import Foundation
import Yams

/// Whether an unset `${VAR}` is a warning (`validate`: CI has no secrets) or an error (`run`);
/// `plan` (`run --dry-run`) warns too and shows the value as `<unset: NAME>`, so a plan can be read
/// on a machine without the secrets.
public enum InterpolationMode: Sendable {
    case validate
    case run
    case plan
}

/// Reads typed values out of Yams nodes for one file, reporting every problem as a located diagnostic.
///
/// Each reader method returns nil after reporting when the node is not what it should be, so parsing
/// goes on and one pass reports every problem in the file.
final class ConfigReader {
    let file: SourceFile
    let interpolator: EnvironmentInterpolator
    let mode: InterpolationMode
    var diagnostics: DiagnosticBag
    /// Resolved values that must never be printed: secret-named variables and credentials.
    var secrets: Set<String> = []
    /// `settings.cache.max_size` and `.dir`, read with the settings' behaviour.
    var cacheStore: (maxSize: Int64?, directory: String?) = (nil, nil)

    init(file: SourceFile, interpolator: EnvironmentInterpolator, mode: InterpolationMode, diagnostics: DiagnosticBag) {
        self.file = file
        self.interpolator = interpolator
        self.mode = mode
        self.diagnostics = diagnostics
    }

    var directory: String { (file.absolutePath as NSString).deletingLastPathComponent }

    func location(_ node: Node) -> SourceLocation {
        let mark = node.mark
        return SourceLocation(file: file.path, line: mark?.line ?? 1, column: mark?.column ?? 1)
    }

    func error(_ code: String, _ message: String, at node: Node, hint: String? = nil) {
        diagnostics.error(code, message, at: location(node), hint: hint)
    }

    func warning(_ code: String, _ message: String, at node: Node, hint: String? = nil) {
        diagnostics.warning(code, message, at: location(node), hint: hint)
    }

    // MARK: - Shapes

    /// A mapping's entries in written order, with their key nodes (for locations).
    struct Entries {
        var items: [(key: String, keyNode: Node, value: Node)]

        subscript(key: String) -> Node? { items.first { $0.key == key }?.value }
        func keyNode(_ key: String) -> Node? { items.first { $0.key == key }?.keyNode }
        func has(_ key: String) -> Bool { items.contains { $0.key == key } }
    }

    /// The entries of a mapping whose keys must come from `allowed`; unknown keys are reported with a
    /// "did you mean" hint. `what` names the mapping in messages ("route", "retry").
    func mapping(_ node: Node, allowed: [String], what: String) -> Entries? {
        guard var entries = anyMapping(node, what: what) else { return nil }
        entries.items.removeAll { item in
            guard !allowed.contains(item.key) else { return false }
            error("unknown-key", "unknown key '\(item.key)' in \(what)", at: item.keyNode,
                  hint: EditDistance.hint(for: item.key, among: allowed))
            return true
        }
        return entries
    }

    /// A mapping with free-form string keys (headers, params, matrix…): entries in written order, YAML
    /// merge keys applied.
    func anyMapping(_ node: Node, what: String) -> Entries? {
        guard case .mapping = node else {
            typeMismatch(node, expected: "a mapping (\(what))")
            return nil
        }
        var items: [(String, Node, Node)] = []
        for (keyNode, value) in mergedPairs(node) {
            guard case .scalar(let scalar) = keyNode else {
                error("type-mismatch", "keys of \(what) must be strings", at: keyNode)
                continue
            }
            items.append((scalar.string, keyNode, value))
        }
        return Entries(items: items)
    }

    /// A mapping's pairs with YAML merge keys applied: `<<: *defaults` (or a list of aliases) adds the
    /// merged mappings' keys that the mapping does not set itself.
    func mergedPairs(_ node: Node) -> [(Node, Node)] {
        guard case .mapping(let mapping) = node else { return [] }
        var own: [(Node, Node)] = []
        var merged: [(Node, Node)] = []
        for (key, value) in mapping {
            guard case .scalar(let scalar) = key, scalar.string == "<<", scalar.style == .plain || scalar.style == .any else {
                own.append((key, value))
                continue
            }
            let sources: [Node]
            switch value {
            case .mapping: sources = [value]
            case .sequence(let list): sources = Array(list)
            default:
                error("type-mismatch", "a merge key '<<' takes a mapping or a list of mappings", at: value)
                continue
            }
            for source in sources {
                guard case .mapping = source else {
                    error("type-mismatch", "a merge key '<<' takes a mapping or a list of mappings", at: source)
                    continue
                }
                merged += mergedPairs(source)
            }
        }
        let ownKeys = Set(own.compactMap { $0.0.string })
        var seen: Set<String> = []
        let inherited = merged.filter { pair in
            guard let key = pair.0.string else { return true }
            return !ownKeys.contains(key) && seen.insert(key).inserted
        }
        return own + inherited
    }

    func sequence(_ node: Node, what: String) -> [Node]? {
        guard case .sequence(let sequence) = node else {
            typeMismatch(node, expected: "a list (\(what))")
            return nil
        }
        return Array(sequence)
    }

    /// Reports a required key that is absent, at the mapping it belongs in.
    func requireKey(_ key: String, in entries: Entries, of node: Node, what: String) -> Node? {
        if let value = entries[key] { return value }
        error("missing-key", "\(what) is missing required key '\(key)'", at: node)
        return nil
    }

    func typeMismatch(_ node: Node, expected: String) {
        error("type-mismatch", "expected \(expected), found \(describe(node))", at: node)
    }

    func describe(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        case .scalar(let scalar):
            if isNull(node) { return "null" }
            let text = scalar.string.count > 40 ? String(scalar.string.prefix(40)) + "…" : scalar.string
            return "'\(text)'"
        }
    }

    /// Plain `null`, `~` or nothing.
    func isNull(_ node: Node) -> Bool {
        guard case .scalar(let scalar) = node, scalar.style == .plain || scalar.style == .any else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    // MARK: - Scalars

    /// A scalar's text with `${VAR}` resolved. Returns the resolution so callers can skip value checks
    /// on text that could not be resolved (an unset variable in `validate`).
    func scalarText(_ node: Node, what: String) -> (text: String, complete: Bool)? {
        guard case .scalar(let scalar) = node, !isNull(node) else {
            typeMismatch(node, expected: what)
            return nil
        }
        return interpolate(scalar.string, at: node)
    }

    /// Resolves `${VAR}` in `text`, reporting unset variables and syntax errors at `node`.
    func interpolate(_ text: String, at node: Node) -> (text: String, complete: Bool) {
        let result = interpolator.resolve(text)
        secrets.formUnion(result.secrets)
        if let syntax = result.syntaxError {
            error("invalid-interpolation", syntax, at: node)
        }
        for (name, message) in result.missing {
            let text = "environment variable '\(name)' is not set" + (message.map { ": \($0)" } ?? "")
            let hint = "set it, or give a default with ${\(name):-default}"
            switch mode {
            case .validate, .plan: warning("unset-variable", text, at: node, hint: hint)
            case .run: error("unset-variable", text, at: node, hint: hint)
            }
        }
        return (result.text, !result.isIncomplete)
    }

    func string(_ node: Node, what: String = "a string") -> String? {
        scalarText(node, what: what)?.text
    }

    func bool(_ node: Node) -> Bool? {
        guard let (text, complete) = scalarText(node, what: "a boolean (true or false)"), complete else { return nil }
        switch text {
        case "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON": return true
        case "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF": return false
        default:
            error("type-mismatch", "expected a boolean (true or false), found '\(text)'", at: node)
            return nil
        }
    }

    /// An integer; `name` (the key) makes a range error say what is out of range.
    /// Most connections one download may open: aria2c's `--split` limit.
    static let maxSegments = 16

    /// `segments: N`, 1 through `maxSegments`.
    func segments(_ node: Node) -> Int? {
        guard let value = int(node, minimum: 1, name: "segments") else { return nil }
        guard value <= Self.maxSegments else {
            error("invalid-value", "'segments' must be at most \(Self.maxSegments), found \(value)", at: node,
                  hint: "more connections to one server rarely help, and servers often refuse them")
            return nil
        }
        return value
    }

    func int(_ node: Node, minimum: Int? = nil, name: String? = nil) -> Int? {
        guard let (text, complete) = scalarText(node, what: "an integer"), complete else { return nil }
        guard let value = Int(text) else {
            error("type-mismatch", "expected an integer, found '\(text)'", at: node)
            return nil
        }
        if let minimum, value < minimum {
            error("invalid-value", "\(name.map { "'\($0)' " } ?? "")must be at least \(minimum), found \(value)", at: node)
            return nil
        }
        return value
    }

    func double(_ node: Node, minimum: Double? = nil, name: String? = nil) -> Double? {
        guard let (text, complete) = scalarText(node, what: "a number"), complete else { return nil }
        guard let value = Double(text), value.isFinite else {
            error("type-mismatch", "expected a number, found '\(text)'", at: node)
            return nil
        }
        if let minimum, value < minimum {
            error("invalid-value", "\(name.map { "'\($0)' " } ?? "")must be at least \(JSONText.number(minimum)), found \(text)", at: node)
            return nil
        }
        return value
    }

    /// One of an enumeration's raw values; a bad value is reported with the choices and a hint.
    func choice<E: RawRepresentable & CaseIterable>(_ node: Node, _ type: E.Type, what: String) -> E? where E.RawValue == String {
        guard let (text, complete) = scalarText(node, what: what), complete else { return nil }
        if let value = E(rawValue: text) { return value }
        let choices = E.allCases.map(\.rawValue)
        error("invalid-value", "invalid \(what) '\(text)' (expected one of: \(choices.joined(separator: ", ")))",
              at: node, hint: EditDistance.hint(for: text, among: choices))
        return nil
    }

    func method(_ node: Node) -> HTTPMethod? {
        guard let (text, complete) = scalarText(node, what: "an HTTP method"), complete else { return nil }
        if let method = HTTPMethod(rawValue: text.uppercased()) { return method }
        let choices = HTTPMethod.allCases.map(\.rawValue)
        error("invalid-value", "invalid HTTP method '\(text)' (expected one of: \(choices.joined(separator: ", ")))",
              at: node, hint: EditDistance.hint(for: text.uppercased(), among: choices))
        return nil
    }

    func duration(_ node: Node) -> Duration? {
        guard let (text, complete) = scalarText(node, what: "a duration (like 30s)"), complete else { return nil }
        if let value = DurationGrammar.parse(text) { return value }
        error("invalid-duration", "invalid duration '\(text)'", at: node,
              hint: "use a number with ms, s, m, h or d, like 250ms, 30s or 5m; a bare number is seconds")
        return nil
    }

    func rate(_ node: Node) -> Rate? {
        guard let (text, complete) = scalarText(node, what: "a rate (like 10/s)"), complete else { return nil }
        if let value = Rate.parse(text) { return value }
        error("invalid-rate", "invalid rate '\(text)'", at: node, hint: "write requests per period, like 10/s, 600/m or 5/15s")
        return nil
    }

    func size(_ node: Node) -> Int64? {
        guard let (text, complete) = scalarText(node, what: "a size (like 10MB)"), complete else { return nil }
        if let value = SizeGrammar.parse(text) { return value }
        error("invalid-size", "invalid size '\(text)'", at: node, hint: "use bytes or a unit: 512KiB, 10MB, 1GiB")
        return nil
    }

    /// `200`, `"2xx"`, `"200-299"`, or a list of those.
    func statusSet(_ node: Node) -> StatusSet? {
        let elements: [Node]
        if case .sequence(let sequence) = node { elements = Array(sequence) } else { elements = [node] }
        var ranges: [ClosedRange<Int>] = []
        var ok = true
        for element in elements {
            guard let (text, complete) = scalarText(element, what: "a status (like 200, \"2xx\" or \"200-299\")") else {
                ok = false
                continue
            }
            guard complete else { ok = false; continue }
            if let range = StatusSet.parseElement(text) {
                ranges.append(range)
            } else {
                ok = false
                error("invalid-status", "invalid status '\(text)'", at: element,
                      hint: "use a code from 100 to 599, a class like \"2xx\", or a range like \"200-299\"")
            }
        }
        return ok && !ranges.isEmpty ? StatusSet(ranges) : nil
    }

    func checksum(_ node: Node) -> Checksum? {
        guard let (text, complete) = scalarText(node, what: "a checksum (sha256:<hex>)"), complete else { return nil }
        if let value = Checksum.parse(text) { return value }
        error("invalid-checksum", "invalid checksum '\(text)'", at: node,
              hint: "write sha256:<64 hex digits> or sha512:<128 hex digits>")
        return nil
    }

    /// An absolute http(s) URL with a host.
    func url(_ node: Node, what: String = "URL") -> String? {
        guard let (text, complete) = scalarText(node, what: "a URL") else { return nil }
        guard complete else { return text }
        if Self.isValidHTTPURL(text) { return text }
        error("invalid-url", "invalid \(what) '\(Redactor.redactURLUserinfo(text))'", at: node,
              hint: "use an absolute http:// or https:// URL with a host")
        return nil
    }

    /// Whether `text` is an absolute http(s) URL with a host. Each `{{name}}` counts as a plain
    /// word, or else as a number, so a placeholder may stand anywhere, the host and the port
    /// included (`https://{{row.host}}:{{row.port}}/…`); the URL a job builds from it is checked
    /// again when its values are in.
    static func isValidHTTPURL(_ text: String) -> Bool {
        guard text.contains("{{") else { return isValidFilledInHTTPURL(text) }
        let template = Template(text)
        return isValidFilledInHTTPURL(template.render { _ in "x" }) || isValidFilledInHTTPURL(template.render { _ in "1" })
    }

    private static func isValidFilledInHTTPURL(_ text: String) -> Bool {
        // `percentEncodedHost`, not `host`: the same emptiness, without `host`'s IDNA decoding,
        // whose first use loads ICU's tables (0.2 ms of a one-job run).
        guard !text.contains(" "), let components = URLComponents(string: text),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.percentEncodedHost, !host.isEmpty else { return false }
        return true
    }

    func stringList(_ node: Node, what: String) -> [String]? {
        if case .scalar = node, !isNull(node) {
            typeMismatch(node, expected: "a list (\(what))")
            return nil
        }
        guard let items = sequence(node, what: what) else { return nil }
        let values = items.compactMap { string($0) }
        return values.count == items.count ? values : nil
    }

    /// A free-form value (params, parameters, matrix values) in the JSON data model. Plain scalars get
    /// their YAML type (int, float, bool, null); quoted ones stay strings; `${VAR}` is resolved in strings.
    func value(_ node: Node) -> ParameterValue {
        switch node {
        case .scalar(let scalar):
            if scalar.style == .plain || scalar.style == .any, let typed = PlainScalar.value(scalar.string) {
                return typed
            }
            return .string(interpolate(scalar.string, at: node).text)
        case .sequence(let sequence):
            return .array(sequence.map(value))
        case .mapping(let mapping):
            return .object(mapping.map { key, value in ParameterEntry(key: key.string ?? "", value: self.value(value)) })
        case .alias:
            return .null
        }
    }
}
