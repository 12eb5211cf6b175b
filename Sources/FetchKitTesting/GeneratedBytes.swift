/// Deterministic content for `/bytes/{n}`: byte `i` is `(i * 31 + seed) mod 256`, so any range can be
/// produced (and checked by tests) without storing the file.
public enum GeneratedBytes {
    public static func byte(at offset: Int, seed: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: offset &* 31 &+ seed)
    }

    /// The bytes `range` of the content with `seed`.
    public static func bytes(_ range: Range<Int>, seed: Int) -> [UInt8] {
        range.map { byte(at: $0, seed: seed) }
    }

    /// A block of `count` bytes starting at `offset`, built from a repeating 256-byte period.
    static func block(offset: Int, count: Int, seed: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBufferPointer { buffer in
            for i in 0..<count { buffer[i] = byte(at: offset + i, seed: seed) }
        }
        return out
    }
}
