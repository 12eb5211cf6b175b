#if canImport(Glibc)
import Glibc
#endif

/// Strings built and compared as UTF-8 bytes, for the per-response paths (header names, cache
/// rows, file names). `String`'s own `+`, `append` and `utf8` iteration check grapheme boundaries
/// or go through the view's index machinery at every step, which a profile of a cold cached run
/// found costing more than the SQLite insert of the same response.
enum UTF8Text {
    /// The parts one after another, in one allocation.
    static func joined(_ a: String, _ b: String, _ c: String = "", _ d: String = "") -> String {
        let total = a.utf8.count + b.utf8.count + c.utf8.count + d.utf8.count
        return String(unsafeUninitializedCapacity: total) { buffer in
            var offset = copy(a, into: buffer, at: 0)
            offset = copy(b, into: buffer, at: offset)
            offset = copy(c, into: buffer, at: offset)
            return copy(d, into: buffer, at: offset)
        }
    }

    /// Appends `text`'s bytes to `bytes` (a memory copy for a native string).
    @inline(__always)
    static func append(_ text: String, to bytes: inout [UInt8]) {
        if text.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: text.utf8)
        }
    }

    /// Appends `value` in decimal (with a `-` when negative), without making a string of it. The
    /// digits are written backwards on the stack and appended at once: appended one by one and then
    /// reversed in place (`bytes[start...].reverse()`), the slice was copied out of the array and
    /// back, about 800 instructions a number where this takes 172 (a log line writes ten).
    static func appendDecimal(_ value: Int64, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Whether `text` holds the byte `byte`: `memchr` over a native string's bytes (a generic scan of
    /// `utf8` costs some 25 instructions a byte, and URLs are checked several times a job).
    static func contains(_ byte: UInt8, in text: String) -> Bool {
        if let found = text.utf8.withContiguousStorageIfAvailable({ bytes in
            bytes.baseAddress.map { memchr($0, Int32(byte), bytes.count) != nil } ?? false
        }) {
            return found
        }
        return text.utf8.contains(byte)
    }

    /// Whether `text` holds the byte `first` directly followed by `second` (`/.` in a path): a
    /// `memchr` for `second`, which is the rarer of the two in a path, then a look at the byte before.
    static func contains(_ first: UInt8, followedBy second: UInt8, in text: String) -> Bool {
        if let found = text.utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            guard let start = bytes.baseAddress else { return false }
            var offset = 1
            while offset < bytes.count, let hit = memchr(start + offset, Int32(second), bytes.count - offset) {
                let at = start.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                if bytes[at - 1] == first { return true }
                offset = at + 1
            }
            return false
        }) {
            return found
        }
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if previous == first, byte == second { return true }
            previous = byte
        }
        return false
    }

    /// The byte offset of the last `byte` in `text`, nil if none.
    static func lastOffset(of byte: UInt8, in text: String) -> Int? {
        if let found = text.utf8.withContiguousStorageIfAvailable({ bytes -> Int? in
            var offset = bytes.count - 1
            while offset >= 0, bytes[offset] != byte { offset -= 1 }
            return offset >= 0 ? offset : nil
        }) {
            return found
        }
        return text.utf8.lastIndex(of: byte).map { text.utf8.distance(from: text.utf8.startIndex, to: $0) }
    }

    /// Whether the first `count` bytes of `text` are the bytes of `other`, compared as bytes.
    static func prefix(of text: String, count: Int, equals other: String) -> Bool {
        guard other.utf8.count == count, text.utf8.count >= count else { return false }
        if let equal = text.utf8.withContiguousStorageIfAvailable({ a in
            other.utf8.withContiguousStorageIfAvailable { b in count == 0 || memcmp(a.baseAddress!, b.baseAddress!, count) == 0 }
        }), let equal {
            return equal
        }
        return text.utf8.prefix(count).elementsEqual(other.utf8)
    }

    /// The offset of the first `://` in `text`, counted in bytes.
    static func schemeSeparator(in text: String) -> Int? {
        let colon = UInt8(ascii: ":"), slash = UInt8(ascii: "/")
        var index = 0, previous: (UInt8, UInt8) = (0, 0)
        for byte in text.utf8 {
            if previous == (colon, slash), byte == slash { return index - 2 }
            previous = (previous.1, byte)
            index += 1
        }
        return nil
    }

    /// Whether `a` and `b` are equal ignoring ASCII case (HTTP field names, RFC 9110 §5.1).
    static func equalsIgnoringASCIICase(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let fast = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in equalIgnoringASCIICase(x, y) }
        }
        if let fast, let result = fast { return result }
        return zip(a.utf8, b.utf8).allSatisfy { sameIgnoringASCIICase($0, $1) }
    }

    private static func equalIgnoringASCIICase(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in 0..<x.count where !sameIgnoringASCIICase(x[index], y[index]) { return false }
        return true
    }

    @inline(__always)
    private static func sameIgnoringASCIICase(_ x: UInt8, _ y: UInt8) -> Bool {
        x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
    }

    /// Copies `text`'s bytes into `buffer` at `offset` (which has room for them); returns the offset
    /// after them. Through the UTF-8 view's own bulk copy, which reads a small string's bytes where
    /// they are: a contiguous-storage closure first copied each small string onto the stack.
    static func copy(_ text: String, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) -> Int {
        let (_, written) = UnsafeMutableBufferPointer(rebasing: buffer[offset...]).initialize(from: text.utf8)
        return offset + written
    }
}
