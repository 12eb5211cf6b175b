import Foundation

/// Compiled param `pattern`s, so a pattern used by thousands of jobs is compiled once.
final class RegexCache: @unchecked Sendable {
    static let shared = RegexCache()

    private let lock = NSLock()
    /// Guarded by `lock`. A nil value records a pattern that does not compile.
    private var compiled: [String: NSRegularExpression?] = [:]

    func regex(_ pattern: String) -> NSRegularExpression? {
        lock.lock()
        defer { lock.unlock() }
        if let cached = compiled[pattern] { return cached }
        let regex = try? NSRegularExpression(pattern: pattern)
        compiled[pattern] = regex
        return regex
    }
}
