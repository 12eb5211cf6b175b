/// One problem found in a config file.
///
/// Diagnostics are collected, never thrown one at a time, so one `validate` run reports every problem.
public struct Diagnostic: Sendable, Hashable {
    public enum Severity: String, Sendable, Hashable, Comparable {
        case error, warning

        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs == .error && rhs == .warning }
    }

    public var severity: Severity
    /// A stable kebab-case name such as `unknown-key`; tools and tests match on it.
    public var code: String
    public var message: String
    public var location: SourceLocation
    /// A suggestion, e.g. `did you mean 'headers'?`.
    public var hint: String?

    public init(_ severity: Severity, code: String, _ message: String, at location: SourceLocation, hint: String? = nil) {
        self.severity = severity
        self.code = code
        self.message = message
        self.location = location
        self.hint = hint
    }
}

/// Collects diagnostics while a set of files is loaded.
public struct DiagnosticBag: Sendable {
    public private(set) var diagnostics: [Diagnostic] = []
    private var seen: Set<Diagnostic> = []

    public init() {}

    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
    public var errorCount: Int { diagnostics.count { $0.severity == .error } }
    public var warningCount: Int { diagnostics.count { $0.severity == .warning } }

    /// Adds a diagnostic unless the identical one is already there (a file included twice reports once).
    public mutating func append(_ diagnostic: Diagnostic) {
        if seen.insert(diagnostic).inserted { diagnostics.append(diagnostic) }
    }

    public mutating func error(_ code: String, _ message: String, at location: SourceLocation, hint: String? = nil) {
        append(Diagnostic(.error, code: code, message, at: location, hint: hint))
    }

    public mutating func warning(_ code: String, _ message: String, at location: SourceLocation, hint: String? = nil) {
        append(Diagnostic(.warning, code: code, message, at: location, hint: hint))
    }

    /// Diagnostics ordered by file, line and column (the order they are read in).
    public var sorted: [Diagnostic] {
        diagnostics.enumerated().sorted { a, b in
            a.element.location != b.element.location ? a.element.location < b.element.location : a.offset < b.offset
        }.map(\.element)
    }
}
