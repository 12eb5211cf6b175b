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
            write(bytes, into: buffer)
            return bytes.count * 2
        }
    }

    /// Writes `bytes` as hex into the first `2 * bytes.count` bytes of `buffer` (a digest's hex
    /// bound to a statement from the stack, with no string made).
    static func write(_ bytes: UnsafeRawBufferPointer, into buffer: UnsafeMutableBufferPointer<UInt8>) {
        precondition(buffer.count >= 2 * bytes.count)
        guard let out = buffer.baseAddress else { return }
        for index in 0..<bytes.count {
            let byte = UInt64(bytes[index])
            out[2 * index] = digit(byte >> 4)
            out[2 * index + 1] = digit(byte & 15)
        }
    }

    /// The lowercase hex digit of `value` (0–15), by arithmetic rather than a table lookup.
    @inline(__always)
    static func digit(_ value: UInt64) -> UInt8 {
        UInt8(truncatingIfNeeded: value < 10 ? 48 + value : 87 + value)
    }

    /// `value` as 16 hex digits.
    static func string(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            for index in 0..<16 { buffer[index] = digits[Int((value >> UInt64(60 - index * 4)) & 0xF)] }
            return 16
        }
    }
}
