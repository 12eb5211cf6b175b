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
}
