import Testing
@testable import FetchKit

/// `RunTally` counts outcomes and cache uses by case index, not in dictionaries: the indexes must
/// follow `allCases`, and the dictionaries it still offers must hold what was counted.
@Suite struct RunTallyTests {
    @Test func everyOutcomeAndCacheUseIsCountedUnderItsOwnCase() {
        #expect(JobResult.Outcome.allCases.map(\.index) == Array(JobResult.Outcome.allCases.indices))
        #expect(RequestMetrics.CacheUse.allCases.map(\.index) == Array(RequestMetrics.CacheUse.allCases.indices))

        var results: [JobResult] = []
        for (n, outcome) in JobResult.Outcome.allCases.enumerated() {
            for _ in 0...n { results.append(JobResult(job: "j", outcome: outcome)) }
        }
        for (n, use) in RequestMetrics.CacheUse.allCases.enumerated() {
            for _ in 0..<(n + 2) { results.append(JobResult(job: "c", outcome: .succeeded, cache: use)) }
        }
        let tally = RunTally(results)
        let succeeded = 1 + (2 + 3 + 4 + 5)
        #expect(tally.outcomes == [.succeeded: succeeded, .failed: 2, .skipped: 3, .upToDate: 4, .cached: 5])
        #expect(tally.cacheUses == [.miss: 2, .hit: 3, .revalidated: 4, .stale: 5])
        #expect(tally.count(.upToDate) == 4 && tally.count(cache: .stale) == 5)
        #expect(RunTally().outcomes.isEmpty && RunTally().cacheUses.isEmpty && RunTally().count(.failed) == 0)
        let summary = RunSummary(runID: "r", results: results, duration: .zero, stop: nil)
        #expect(summary.count(.cached) == 5 && summary.count(cache: .hit) == 3)
    }
}
