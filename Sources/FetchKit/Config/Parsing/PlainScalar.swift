/// Types a plain (unquoted) YAML scalar the way YAML 1.1's core tags do for what configs use: null,
/// booleans (`true`/`yes`/`on`…), integers (decimal, `0x`, `0o`), floats (`1.5`, `1e3`, `.inf`, `.nan`).
/// Anything else, and every quoted scalar, is a string. A scalar with `${` stays a string so it can be
/// interpolated.
enum PlainScalar {
    static func value(_ text: String) -> ParameterValue? {
        switch text {
        case "", "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON": return .bool(true)
        case "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF": return .bool(false)
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .double(.infinity)
        case "-.inf", "-.Inf", "-.INF": return .double(-.infinity)
        case ".nan", ".NaN", ".NAN": return .double(.nan)
        default: break
        }
        guard let first = text.utf8.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+")
                || first == UInt8(ascii: ".") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return nil }
        let cleaned = text.contains("_") ? text.replacingOccurrences(of: "_", with: "") : text
        if let int = Int(cleaned) { return .int(int) }
        for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] where cleaned.hasPrefix(prefix) {
            return Int(cleaned.dropFirst(2), radix: radix).map(ParameterValue.int)
        }
        let allowed = Set("0123456789+-.eE")
        guard cleaned.allSatisfy(allowed.contains), cleaned.contains(where: \.isNumber),
              let double = Double(cleaned) else { return nil }
        return .double(double)
    }
}

import Foundation
