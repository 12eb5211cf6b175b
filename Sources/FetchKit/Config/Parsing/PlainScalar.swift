/// Types a plain (unquoted) YAML scalar the way YAML 1.1's core tags do for what configs use: null,
/// booleans (`true`/`yes`/`on`…), integers (decimal, `0x`, `0o`), floats (`1.5`, `1e3`, `.inf`, `.nan`).
/// Anything else, and every quoted scalar, is a string. A scalar with `${` stays a string so it can be
/// interpolated.
enum PlainScalar {
    static func value(_ text: String) -> ParameterValue? {
        // No word below starts with a digit: a number skips their 35 comparisons (a big matrix's
        // values are mostly numbers).
        let startsWithDigit = text.utf8.first.map { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } ?? false
        if !startsWithDigit { if let word = word(text) { return word } }
        guard let first = text.utf8.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+")
                || first == UInt8(ascii: ".") || startsWithDigit else { return nil }
        // A byte test: `String.contains(String)` goes through Foundation's string search, which cost
        // more than the rest of this function for every number of a 20,000-value matrix.
        let cleaned = text.utf8.contains(UInt8(ascii: "_")) ? String(text.filter { $0 != "_" }) : text
        if let int = Int(cleaned) { return .int(int) }
        for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] where cleaned.hasPrefix(prefix) {
            return Int(cleaned.dropFirst(2), radix: radix).map(ParameterValue.int)
        }
        let allowed = Set("0123456789+-.eE")
        guard cleaned.allSatisfy(allowed.contains), cleaned.contains(where: \.isNumber),
              let double = Double(cleaned) else { return nil }
        return .double(double)
    }

    /// The words a plain scalar can be besides a number: null, the booleans, the infinities and NaN.
    private static func word(_ text: String) -> ParameterValue? {
        switch text {
        case "", "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON": return .bool(true)
        case "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF": return .bool(false)
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .double(.infinity)
        case "-.inf", "-.Inf", "-.INF": return .double(-.infinity)
        case ".nan", ".NaN", ".NAN": return .double(.nan)
        default: return nil
        }
    }
}

import Foundation
