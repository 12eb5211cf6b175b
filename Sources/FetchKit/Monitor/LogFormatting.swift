import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Timestamps, sizes and rates as fetchctl prints them.
public enum LogFormatting {
    /// RFC 3339 in UTC with milliseconds: `2026-11-21T12:00:00.123Z`.
    public static func timestamp(_ date: Date = Date()) -> String {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        let millis = Int((interval - Double(seconds)) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var out = ""
        out.reserveCapacity(24)
        out += pad(Int(parts.tm_year) + 1900, 4) + "-" + pad(Int(parts.tm_mon) + 1, 2) + "-" + pad(Int(parts.tm_mday), 2)
        out += "T" + pad(Int(parts.tm_hour), 2) + ":" + pad(Int(parts.tm_min), 2) + ":" + pad(Int(parts.tm_sec), 2)
        out += "." + pad(min(999, max(0, millis)), 3) + "Z"
        return out
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
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
