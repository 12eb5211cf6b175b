import Foundation

/// Parses durations: `250ms`, `30s`, `5m`, `1h`, `1d`, or a bare number of seconds (`1.5`).
public enum DurationGrammar {
    /// The longest duration accepted: 10^9 seconds (about 31 years).
    public static let maximumSeconds = 1e9

    /// The duration, or nil when `text` is not one.
    public static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        var number = Substring(trimmed)
        var scale = 1.0
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            let candidate = trimmed.dropLast(suffix.count)
            // "ms" also ends in "s": take the longest unit whose prefix is a number.
            if Self.isNumber(candidate) {
                number = candidate
                scale = factor
                break
            }
        }
        guard Self.isNumber(number), let value = Double(number) else { return nil }
        let seconds = value * scale
        // Beyond about 31 years a duration is a typo, and in nanoseconds it would overflow Int64.
        guard seconds <= maximumSeconds else { return nil }
        let whole = seconds.rounded(.down)
        return .seconds(Int64(whole)) + .nanoseconds(Int64(((seconds - whole) * 1e9).rounded()))
    }

    /// Digits with an optional fraction: what a duration, a size or a rate count may be.
    static func isNumber(_ text: Substring) -> Bool {
        guard !text.isEmpty, text.first != ".", text.last != "." else { return false }
        var seenDot = false
        for character in text {
            if character == "." {
                if seenDot { return false }
                seenDot = true
            } else if !character.isASCII || !character.isNumber {
                return false
            }
        }
        return true
    }

    /// A short form for messages and listings: `1.5s`, `250ms`, `2m`.
    public static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let ms = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        if ms % 3_600_000 == 0, ms > 0 { return "\(ms / 3_600_000)h" }
        if ms % 60_000 == 0, ms > 0 { return "\(ms / 60_000)m" }
        if ms % 1000 == 0 { return "\(ms / 1000)s" }
        return "\(ms)ms"
    }
}

/// A request rate: `count` requests per `period` (`10/s`, `600/m`, `5/15s`).
public struct Rate: Sendable, Equatable {
    public var count: Int
    public var period: Duration

    public init(count: Int, period: Duration) {
        self.count = count
        self.period = period
    }

    /// Parses `N/unit` or `N/Kunit`; nil when `text` is not a rate.
    public static func parse(_ text: String) -> Rate? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Int(parts[0]), count > 0 else { return nil }
        var periodText = String(parts[1])
        if let first = periodText.first, !first.isNumber { periodText = "1" + periodText }
        guard periodText.last?.isLetter == true, let period = DurationGrammar.parse(periodText), period > .zero else {
            return nil
        }
        return Rate(count: count, period: period)
    }
}

/// Parses sizes: `512KiB`, `10MB`, `1.5GiB`, or bare bytes.
public enum SizeGrammar {
    public static func parse(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [
            ("KiB", 1024), ("MiB", 1_048_576), ("GiB", 1_073_741_824), ("TiB", 1_099_511_627_776),
            ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12), ("B", 1),
        ]
        var number = Substring(trimmed)
        var factor = 1.0
        for (suffix, unitFactor) in units where trimmed.hasSuffix(suffix) {
            number = trimmed.dropLast(suffix.count)
            while number.last == " " { number = number.dropLast() }
            factor = unitFactor
            break
        }
        guard DurationGrammar.isNumber(number), let value = Double(number) else { return nil }
        let bytes = (value * factor).rounded()
        guard bytes < 9e18 else { return nil }
        return Int64(bytes)
    }
}
