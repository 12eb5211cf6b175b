import Foundation

/// Timestamps, sizes and rates as fetchctl prints them.
public enum LogFormatting {
    /// RFC 3339 in UTC with milliseconds: `2026-11-21T12:00:00.123Z`.
    public static func timestamp(_ date: Date = Date()) -> String {
        let interval = date.timeIntervalSince1970
        let seconds = interval.rounded(.down)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        LogLine.appendTimestamp(seconds: Int(seconds), millis: Int((interval - seconds) * 1000), to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `512 B`, `12.3 KiB`, `3.1 MiB`, `1.0 GiB`.
    public static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        guard unit > 0 else { return "\(count) B" }
        // Decimals by hand, here and below: Foundation's `String(format:)` made the runtime scan
        // its conformance records when the run's summary was printed (a quarter of a millisecond).
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }

    /// `850 ms`, `1.24 s`, `2m 05s`.
    public static func duration(_ duration: Duration) -> String {
        let seconds = duration.seconds
        if seconds < 1 { return "\(duration.milliseconds) ms" }
        func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        if seconds < 60 {
            let hundredths = Int((seconds * 100).rounded())
            return "\(hundredths / 100).\(twoDigits(hundredths % 100)) s"
        }
        return "\(Int(seconds) / 60)m \(twoDigits(Int(seconds) % 60))s"
    }
}
