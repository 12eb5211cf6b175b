import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// HTTP-dates (RFC 9110 §5.6.7): IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), and the obsolete
/// RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`) forms a
/// recipient must accept. Always UTC.
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    public static func parse(_ text: String) -> Date? {
        if let date = parseFixdate(text) { return date }
        let words = text.split(whereSeparator: { $0 == " " || $0 == "-" }).map(String.init)
        var day: Int?, month: Int?, year: Int?, clock: [Int] = []
        switch words.count {
        case 6 where words[5] == "GMT":  // IMF-fixdate or RFC 850 (with '-' split)
            day = Int(words[1]); month = monthIndex(words[2]); year = Int(words[3]); clock = time(words[4])
            if let y = year, words[3].count == 2 { year = y < 70 ? 2000 + y : 1900 + y }
        case 5:  // asctime
            month = monthIndex(words[1]); day = Int(words[2]); clock = time(words[3]); year = Int(words[4])
        default:
            return nil
        }
        guard let day, let month, let year, clock.count == 3, (1...31).contains(day) else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(clock[0])
        parts.tm_min = Int32(clock[1])
        parts.tm_sec = Int32(clock[2])
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    /// The preferred form, `Sun, 06 Nov 1994 08:49:37 GMT`, read from its fixed positions without
    /// splitting into words (a cache hit parses a `Date` or two). Nil for anything else, which the
    /// general parser then reads.
    private static func parseFixdate(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { b -> Date? in
            guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 32, b[7] == 32, b[11] == 32, b[16] == 32, b[19] == UInt8(ascii: ":"),
                  b[22] == UInt8(ascii: ":"), b[25] == 32, b[26] == UInt8(ascii: "G"), b[27] == UInt8(ascii: "M"), b[28] == UInt8(ascii: "T")
            else { return nil }
            func number(_ from: Int, _ count: Int) -> Int? {
                var value = 0
                for index in from..<(from + count) {
                    let digit = Int(b[index]) - 48
                    guard (0...9).contains(digit) else { return nil }
                    value = value * 10 + digit
                }
                return value
            }
            let monthKey = (Int(b[8] | 0x20) << 16) | (Int(b[9] | 0x20) << 8) | Int(b[10] | 0x20)
            guard let day = number(5, 2), let year = number(12, 4), let hour = number(17, 2), let minute = number(20, 2),
                  let second = number(23, 2), let month = monthKeys.firstIndex(of: monthKey),
                  (1...31).contains(day), hour < 24, minute < 60, second <= 60 else { return nil }
            // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
            let y = month < 2 ? year - 1 : year
            let era = (y >= 0 ? y : y - 399) / 400
            let yearOfEra = y - era * 400
            let shiftedMonth = (month + 10) % 12  // March = 0
            let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            let days = era * 146_097 + dayOfEra - 719_468
            return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + second))
        }
    }

    private static let monthKeys: [Int] = months.map { name in name.utf8.reduce(0) { $0 << 8 | Int($1) } }

    /// `date` as an IMF-fixdate.
    public static func format(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        return String(format: "%@, %02d %@ %04d %02d:%02d:%02d GMT", days[Int(parts.tm_wday)], parts.tm_mday,
                      months[Int(parts.tm_mon)].capitalized, parts.tm_year + 1900, parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    private static func monthIndex(_ word: String) -> Int? { months.firstIndex(of: word.lowercased()) }

    private static func time(_ word: String) -> [Int] {
        let parts = word.split(separator: ":").compactMap { Int($0) }
        guard parts.count == 3, parts[0] < 24, parts[1] < 60, parts[2] <= 60 else { return [] }
        return parts
    }
}
