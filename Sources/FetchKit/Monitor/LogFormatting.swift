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
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    /// `850 ms`, `1.24 s`, `2m 05s`.
    public static func duration(_ duration: Duration) -> String {
        let seconds = duration.seconds
        if seconds < 1 { return "\(duration.milliseconds) ms" }
        if seconds < 60 { return String(format: "%.2f s", seconds) }
        return String(format: "%dm %02ds", Int(seconds) / 60, Int(seconds) % 60)
    }
}
