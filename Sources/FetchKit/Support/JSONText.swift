/// Writes JSON text the way Foundation's `JSONEncoder` does (compact, `/` escaped as `\/`,
/// non-ASCII kept as UTF-8), so output matches Alamofire's `JSONParameterEncoder` byte for byte.
enum JSONText {
    /// A JSON string literal for `s`. `escapeSlash` matches `JSONEncoder`; diagnostics turn it off.
    static func quote(_ s: String, escapeSlash: Bool = true) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "/" where escapeSlash: out += "\\/"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// A JSON number for `value`: integral doubles print without a fraction, as `JSONEncoder` does.
    static func number(_ value: Double) -> String {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
            return String(Int64(value))
        }
        return String(value)
    }
}
