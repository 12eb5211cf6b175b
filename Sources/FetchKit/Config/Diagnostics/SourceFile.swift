import Foundation

/// The text of a config file, kept so diagnostics can quote the offending line.
public struct SourceFile: Sendable {
    /// The path as the user named it (used in diagnostics).
    public let path: String
    /// The absolute, standardized path (used to detect the same file reached twice).
    public let absolutePath: String
    public let text: String
    /// The UTF-8 offset where each line starts. Found by a byte scan: splitting the text into
    /// Characters cost 5 ms for a 20,000-value matrix line, and "\r\n" is one Character, so CRLF
    /// files never split at all.
    private let lineStarts: [Int]

    public init(path: String, absolutePath: String, text: String) {
        self.path = path
        self.absolutePath = absolutePath
        self.text = text
        var starts = [0]
        var offset = 0
        for byte in text.utf8 {
            offset += 1
            if byte == UInt8(ascii: "\n") { starts.append(offset) }
        }
        self.lineStarts = starts
    }

    /// The 1-based line `number`, without its line terminator, or nil past the end.
    public func line(_ number: Int) -> String? {
        guard number >= 1, number <= lineStarts.count else { return nil }
        let utf8 = text.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: lineStarts[number - 1])
        var end = number < lineStarts.count ? utf8.index(utf8.startIndex, offsetBy: lineStarts[number] - 1) : utf8.endIndex
        if end > start, utf8[utf8.index(before: end)] == UInt8(ascii: "\r") { end = utf8.index(before: end) }
        return String(Substring(utf8[start..<end]))
    }
}
