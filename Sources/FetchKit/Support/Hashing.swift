import Glibc

/// A set of 64-bit hashes in one flat array (open addressing, linear probing), sized up front for
/// the number expected: a million hashes take 9.4 MB and are never rehashed, where a `Set<UInt64>`
/// takes 16 MB and briefly 24 while it grows. Used to tell a data file's records apart at run time.
struct HashSet64 {
    private var slots: [UInt64]
    private(set) var count = 0
    /// Filled at most this much before the table doubles (when more came than expected).
    private static let maximumLoad = 0.9

    init(expected: Int) {
        slots = Array(repeating: 0, count: Self.capacity(for: expected))
    }

    private static func capacity(for expected: Int) -> Int {
        max(64, Int((Double(max(expected, 1)) / 0.85).rounded(.up)))
    }

    /// Inserts `hash`; false when it was there already.
    mutating func insert(_ hash: UInt64) -> Bool {
        let key = hash == 0 ? 1 : hash  // 0 marks an empty slot
        if Double(count + 1) > Double(slots.count) * Self.maximumLoad { grow() }
        var index = slot(for: key)
        while true {
            let slot = slots[index]
            if slot == 0 {
                slots[index] = key
                count += 1
                return true
            }
            if slot == key { return false }
            index += 1
            if index == slots.count { index = 0 }
        }
    }

    func contains(_ hash: UInt64) -> Bool {
        let key = hash == 0 ? 1 : hash
        var index = slot(for: key)
        while true {
            let slot = slots[index]
            if slot == 0 { return false }
            if slot == key { return true }
            index += 1
            if index == slots.count { index = 0 }
        }
    }

    /// Calls `body` with every hash held (0 comes back as 1, as it is kept).
    func forEach(_ body: (UInt64) -> Void) {
        for key in slots where key != 0 { body(key) }
    }

    /// Where probing for `key` starts: mixed first, as FNV-1a's low bits follow the input's last
    /// bytes and the table's size is a power of two once it has grown.
    private func slot(for key: UInt64) -> Int {
        Int(truncatingIfNeeded: BloomFilter64.mix(key) % UInt64(slots.count))
    }

    private mutating func grow() {
        let old = slots
        slots = Array(repeating: 0, count: old.count * 2)
        count = 0
        for key in old where key != 0 { _ = insert(key) }
    }
}

/// A Bloom filter of fixed size over 64-bit hashes: `mayContain` is false only for hashes never
/// inserted (a true answer may be wrong, about 0.2% of the time at a million hashes with the default
/// 2 MiB). For questions where a wrong "maybe" only costs a look elsewhere.
///
/// The bits come from `calloc`, which hands back the kernel's zeroed pages untouched: a page is
/// mapped only when a hash lands in it. An array filled with zeros wrote all 512 pages of the
/// default size before the first request of every run, one job or a million. Copies share the bits
/// (the filter is used in place).
struct BloomFilter64 {
    private final class Bits: @unchecked Sendable {
        let words: UnsafeMutablePointer<UInt64>

        init(count: Int) {
            guard let memory = calloc(count, MemoryLayout<UInt64>.stride) else { fatalError("cannot allocate a Bloom filter of \(count) words") }
            words = memory.assumingMemoryBound(to: UInt64.self)
        }

        deinit { free(words) }
    }

    private let bits: Bits
    private let mask: UInt64
    private static let probes = 4

    /// - Parameter bitCountLog2: the filter's size as a power of two bits (24: 2 MiB).
    init(bitCountLog2: Int = 24) {
        bits = Bits(count: (1 << bitCountLog2) / 64)
        mask = (1 << UInt64(bitCountLog2)) - 1
    }

    /// Double hashing from the two halves of one (mixed) 64-bit hash.
    @inline(__always)
    private func position(_ mixed: UInt64, _ probe: UInt64) -> UInt64 {
        ((mixed & 0xFFFF_FFFF) &+ probe &* ((mixed >> 32) | 1)) & mask
    }

    mutating func insert(_ hash: UInt64) {
        let mixed = Self.mix(hash)
        for probe in 0..<UInt64(Self.probes) {
            let bit = position(mixed, probe)
            bits.words[Int(bit >> 6)] |= 1 << (bit & 63)
        }
    }

    /// Inserts `hash`; true when it was surely not there before.
    mutating func insertIfAbsent(_ hash: UInt64) -> Bool {
        let absent = !mayContain(hash)
        insert(hash)
        return absent
    }

    func mayContain(_ hash: UInt64) -> Bool {
        let mixed = Self.mix(hash)
        for probe in 0..<UInt64(Self.probes) {
            let bit = position(mixed, probe)
            if bits.words[Int(bit >> 6)] & (1 << (bit & 63)) == 0 { return false }
        }
        return true
    }

    /// MurmurHash3's 64-bit finalizer: FNV-1a's low bits follow the input's last bytes.
    static func mix(_ value: UInt64) -> UInt64 {
        var hash = value
        hash ^= hash >> 33
        hash &*= 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash &*= 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        return hash
    }
}

/// FNV-1a, 64 bits, over a string's UTF-8: the stable hash of ids, paths and URLs (the same on
/// every machine and in every version; mix it with `BloomFilter64.mix` where its low bits matter).
enum FNV1a {
    static func hash(_ text: String) -> UInt64 {
        var text = text
        // Over the string's contiguous bytes: iterating `utf8` cost four times as much a byte.
        return text.withUTF8 { hash($0) }
    }

    /// The hash of `bytes`, with ASCII letters taken as lower case when `lowercasingASCII` (names
    /// that compare without regard to case, such as a URL's host).
    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>, lowercasingASCII: Bool = false) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(lowercasingASCII && byte >= 65 && byte <= 90 ? byte | 0x20 : byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }
}

/// The URL hashes a response cache stored since it opened empty (`SQLiteResponseCache`): exact, in a
/// `HashSet64`, while there are at most `exactLimit` of them, then a `BloomFilter64` of fixed size
/// (2 MiB, a million URLs included). A run of a few thousand jobs touches a few pages of memory
/// instead of faulting in most of the filter's 512, one random page for each of the four probes a
/// lookup and a store make, and its answers are never wrong.
struct StoredHashFilter {
    private var exact: HashSet64? = HashSet64(expected: 0)
    private var bloom: BloomFilter64?
    /// Hashes kept exactly (their table is then 1 MiB at most).
    static let exactLimit = 1 << 16

    func mayContain(_ hash: UInt64) -> Bool {
        if let exact { return exact.contains(hash) }
        return bloom!.mayContain(hash)
    }

    /// Inserts `hash`; true when it was surely not there before.
    mutating func insertIfAbsent(_ hash: UInt64) -> Bool {
        guard exact != nil else { return bloom!.insertIfAbsent(hash) }
        let inserted = exact!.insert(hash)
        if exact!.count > Self.exactLimit {
            var filter = BloomFilter64()
            exact!.forEach { key in
                filter.insert(key)
                if key == 1 { filter.insert(0) }  // the set keeps 0 as 1: both stay "maybe"
            }
            bloom = filter
            exact = nil
        }
        return inserted
    }
}
