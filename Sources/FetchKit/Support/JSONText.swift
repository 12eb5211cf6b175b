/// Writes JSON text the way Foundation's `JSONEncoder` does (compact, `/` escaped as `\/`,
/// non-ASCII kept as UTF-8), so output matches Alamofire's `JSONParameterEncoder` byte for byte.
enum JSONText {
    /// A JSON string literal for `s`. `escapeSlash` matches `JSONEncoder`; diagnostics turn it off.
    static func quote(_ s: String, escapeSlash: Bool = true) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count + 2)
        appendQuoted(s.utf8, escapeSlash: escapeSlash, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the JSON string literal for `utf8` byte by byte (UTF-8 sequences pass through whole;
    /// every byte that needs an escape is ASCII), for writers that build whole lines as bytes.
    static func appendQuoted(_ utf8: String.UTF8View, escapeSlash: Bool, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "/") where escapeSlash: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "/"))
            case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case 0x08: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "f"))
            case ..<0x20:
                bytes.append(contentsOf: "\\u00".utf8)
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A JSON number for `value`: integral doubles print without a fraction, as `JSONEncoder` does.
    static func number(_ value: Double) -> String {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
            return String(Int64(value))
        }
        return String(value)
    }
}
