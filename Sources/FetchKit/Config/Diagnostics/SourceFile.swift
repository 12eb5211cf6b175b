import Foundation

/// The text of a config file, kept so diagnostics can quote the offending line.
public struct SourceFile: Sendable {
    /// The path as the user named it (used in diagnostics).
    public let path: String
    /// The absolute, standardized path (used to detect the same file reached twice).
    public let absolutePath: String
    public let text: String
    private let lines: [Substring]

    public init(path: String, absolutePath: String, text: String) {
        self.path = path
        self.absolutePath = absolutePath
        self.text = text
        self.lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    }

    /// The 1-based line `number`, without its line terminator, or nil past the end.
    public func line(_ number: Int) -> String? {
        guard number >= 1, number <= lines.count else { return nil }
        var line = String(lines[number - 1])
        if line.hasSuffix("\r") { line.removeLast() }
        return line
    }
}
