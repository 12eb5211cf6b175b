import Testing
@testable import FetchKit

/// The run's compact sets: exact for the data file's output paths, a Bloom filter for the cache.
@Suite struct HashSetTests {
    @Test func hashSetIsExactAndGrowsPastItsExpectedSize() {
        var set = HashSet64(expected: 100)
        var firsts = 0, seconds = 0
        for n in 0..<1_000 where set.insert(UInt64(n) &* 0x9E37_79B9_7F4A_7C15) { firsts += 1 }
        for n in 0..<1_000 where set.insert(UInt64(n) &* 0x9E37_79B9_7F4A_7C15) { seconds += 1 }
        #expect(firsts == 1_000 && seconds == 0)
        #expect(set.count == 1_000)
        var other = HashSet64(expected: 4)
        let zeroFirst = other.insert(0), zeroAgain = other.insert(0)
        #expect(zeroFirst && !zeroAgain, "0 (kept as 1, the empty slot's marker being 0) is a hash like any other")
    }

    @Test func bloomFilterNeverForgetsAndRarelyImagines() {
        var filter = BloomFilter64(bitCountLog2: 20)
        for n in 0..<10_000 { filter.insert(UInt64(n)) }
        #expect((0..<10_000).allSatisfy { filter.mayContain(UInt64($0)) })
        let imagined = (10_000..<110_000).filter { filter.mayContain(UInt64($0)) }.count
        #expect(imagined < 500, "false positives: \(imagined) of 100,000")
        var fresh = BloomFilter64(bitCountLog2: 16)
        let first = fresh.insertIfAbsent(42), again = fresh.insertIfAbsent(42)
        #expect(first && !again)
    }

    @Test func storedHashFilterIsExactUntilItBecomesABloomFilter() {
        var filter = StoredHashFilter()
        let hashes = (0..<UInt64(StoredHashFilter.exactLimit)).map { $0 &* 0x9E37_79B9_7F4A_7C15 }  // 0 among them
        let firsts = hashes.filter { filter.insertIfAbsent($0) }.count
        let again = filter.insertIfAbsent(hashes[7])
        #expect(firsts == hashes.count && !again, "each new once, then seen before")
        let strangers = (1...100_000 as ClosedRange<UInt64>).map { $0 &* 0xC2B2_AE3D_27D4_EB4F &+ 1 }
        #expect(strangers.allSatisfy { !filter.mayContain($0) }, "exact: no stranger is a maybe")
        // One more than the limit: every hash so far moves to the Bloom filter, 0 included.
        let last = filter.insertIfAbsent(0xDEAD_BEEF), seventh = filter.insertIfAbsent(hashes[7])
        #expect(last && !seventh)
        #expect(hashes.allSatisfy { filter.mayContain($0) } && filter.mayContain(0xDEAD_BEEF))
        let imagined = strangers.filter { filter.mayContain($0) }.count
        #expect(imagined < 100, "false positives once a Bloom filter: \(imagined) of 100,000")
    }
}
