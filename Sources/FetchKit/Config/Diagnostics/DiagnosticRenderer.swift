import Foundation

/// Renders diagnostics for people (compiler style), for machines (JSON) and for GitHub Actions.
public struct DiagnosticRenderer: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case text, json, github
    }

    /// The files the diagnostics point into, by the path used in their locations.
    private let sources: [String: SourceFile]

    public init(sources: [SourceFile]) {
        var byPath: [String: SourceFile] = [:]
        for file in sources { byPath[file.path] = file }
        self.sources = byPath
    }

    public func render(_ diagnostics: [Diagnostic], format: Format) -> String {
        switch format {
        case .text: return diagnostics.map(text).joined()
        case .json: return json(diagnostics)
        case .github: return diagnostics.map(github).joined()
        }
    }

    private func quote(_ s: String) -> String { JSONText.quote(s, escapeSlash: false) }

    /// `file:line:col: error: message (hint)`, then the source line and a caret under the column.
    public func text(_ d: Diagnostic) -> String {
        var out = "\(d.location): \(d.severity.rawValue): \(d.message)"
        if let hint = d.hint { out += " (\(hint))" }
        out += "\n"
        if let line = sources[d.location.file]?.line(d.location.line) {
            out += line + "\n"
            out += caretLine(under: line, column: d.location.column) + "\n"
        }
        return out
    }

    /// One JSON array of `{file, line, column, severity, code, message, hint}` objects (SPEC §3).
    public func json(_ diagnostics: [Diagnostic]) -> String {
        let items = diagnostics.map { d -> String in
            let fields: [(String, String)] = [
                ("file", quote(d.location.file)),
                ("line", String(d.location.line)),
                ("column", String(d.location.column)),
                ("severity", quote(d.severity.rawValue)),
                ("code", quote(d.code)),
                ("message", quote(d.message)),
                ("hint", d.hint.map(quote) ?? "null"),
            ]
            return "  {" + fields.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}"
        }
        return items.isEmpty ? "[]\n" : "[\n" + items.joined(separator: ",\n") + "\n]\n"
    }

    /// A GitHub Actions workflow command: `::error file=…,line=…,col=…,title=…::message`.
    public func github(_ d: Diagnostic) -> String {
        var message = d.message
        if let hint = d.hint { message += " (\(hint))" }
        let properties = [
            "file=\(escapeProperty(d.location.file))",
            "line=\(d.location.line)",
            "col=\(d.location.column)",
            "title=\(escapeProperty(d.code))",
        ].joined(separator: ",")
        return "::\(d.severity.rawValue) \(properties)::\(escapeData(message))\n"
    }

    /// Spaces up to the column, keeping tabs so the caret lines up in a terminal.
    private func caretLine(under line: String, column: Int) -> String {
        var prefix = ""
        for (index, scalar) in line.unicodeScalars.enumerated() where index < column - 1 {
            prefix.append(scalar == "\t" ? "\t" : " ")
        }
        let missing = max(0, column - 1 - line.unicodeScalars.count)
        return prefix + String(repeating: " ", count: missing) + "^"
    }

    private func escapeData(_ s: String) -> String {
        s.replacingOccurrences(of: "%", with: "%25")
            .replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }

    private func escapeProperty(_ s: String) -> String {
        escapeData(s).replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C")
    }
}
