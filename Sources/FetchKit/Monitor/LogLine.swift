#if canImport(Glibc)
import Glibc
#endif

/// One text log line, `<ts> <level> <event> key=value …\n`, built as UTF-8 bytes in one buffer.
/// A run of 20,000 small jobs writes 20,000 lines; building each from small strings (padded
/// numbers, a quoted job id, a tuple array of fields) cost more than the rest of the job's
/// bookkeeping together, so this appends digits and escapes byte by byte instead.
struct LogLine {
    private(set) var bytes: [UInt8] = []

    /// Starts a line: timestamp, level padded to 5 characters, event.
    init(level: String, event: String, time: timespec = LogLine.now()) {
        bytes.reserveCapacity(160)
        LogLine.appendTimestamp(seconds: time.tv_sec, millis: Int(time.tv_nsec / 1_000_000), to: &bytes)
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: level.utf8)
        for _ in level.utf8.count..<max(5, level.utf8.count) { bytes.append(UInt8(ascii: " ")) }
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: event.utf8)
    }

    /// ` key=value`, the value double-quoted (JSON escapes) when it is empty or has a space, a
    /// quote, `=` or a control character, as logfmt readers expect.
    mutating func field(_ key: String, _ value: String) {
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: key.utf8)
        bytes.append(UInt8(ascii: "="))
        let utf8 = value.utf8
        guard utf8.isEmpty || utf8.contains(where: { $0 <= UInt8(ascii: " ") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=") }) else {
            bytes.append(contentsOf: utf8)
            return
        }
        JSONText.appendQuoted(utf8, escapeSlash: false, to: &bytes)
    }

    /// ` key=123`.
    mutating func field(_ key: String, _ value: some BinaryInteger) {
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: key.utf8)
        bytes.append(UInt8(ascii: "="))
        UTF8Text.appendDecimal(Int64(value), to: &bytes)
    }

    /// The finished line, newline included.
    var text: String {
        var bytes = self.bytes
        bytes.append(UInt8(ascii: "\n"))
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - Pieces

    static func now() -> timespec {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return time
    }

    /// RFC 3339 in UTC with milliseconds: `2026-11-21T12:00:00.123Z`.
    static func appendTimestamp(seconds: Int, millis: Int, to bytes: inout [UInt8]) {
        // The civil date from days since 1970 (Howard Hinnant's days_from_civil, inverted): no
        // gmtime_r, which takes glibc's time-zone lock on every call.
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        appendPadded(year, width: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendPadded(month, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendPadded(day, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        appendPadded(secondOfDay / 3600, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendPadded(secondOfDay / 60 % 60, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendPadded(secondOfDay % 60, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "."))
        appendPadded(min(999, max(0, millis)), width: 3, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// A non-negative number with leading zeros up to `width` digits.
    static func appendPadded(_ value: Int, width: Int, to bytes: inout [UInt8]) {
        var digits = 1
        var rest = value / 10
        while rest > 0 { digits += 1; rest /= 10 }
        for _ in digits..<max(width, digits) { bytes.append(UInt8(ascii: "0")) }
        UTF8Text.appendDecimal(Int64(value), to: &bytes)
    }

}
