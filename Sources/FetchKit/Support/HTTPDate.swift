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
