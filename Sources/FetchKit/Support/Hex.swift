/// Lower-case hexadecimal text, byte by byte (`String(format: "%02x")` goes through Foundation's
/// formatter, which cost a response-cache lookup more than its SQLite query).
enum Hex {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    static func string(_ bytes: some Sequence<UInt8>) -> String {
        if let text = bytes.withContiguousStorageIfAvailable({ string(UnsafeRawBufferPointer($0)) }) { return text }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Contiguous bytes (a digest's), written straight into the string's storage.
    static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            for (index, byte) in bytes.enumerated() {
                buffer[2 * index] = digits[Int(byte >> 4)]
                buffer[2 * index + 1] = digits[Int(byte & 0xF)]
            }
            return bytes.count * 2
        }
    }

    /// `value` as 16 hex digits.
    static func string(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            for index in 0..<16 { buffer[index] = digits[Int((value >> UInt64(60 - index * 4)) & 0xF)] }
            return 16
        }
    }
}
