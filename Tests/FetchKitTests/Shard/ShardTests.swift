import Foundation
import Testing
@testable import FetchKit

/// Shard assignment on real plans, without processes: a job added moves no other, a `needs`
/// chain stays in one shard, sizes are even, the shards cover the plan, `index-env=` and mistakes.
@Suite struct ShardAssignmentTests {
    func plan(_ extra: String = "", pages: Int = 400) throws -> [ExpandedJob] {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            jobs:
              - {id: page, url: "https://example.org/p/{{matrix.n}}", matrix: {n: [\((0..<pages).map(String.init).joined(separator: ", "))]}}
              - {id: root, url: "https://example.org/root"}
              - {id: middle, url: "https://example.org/middle", needs: [root]}
              - {id: leaf, url: "https://example.org/leaf", needs: [middle]}
            \(extra)
            """])
        let config = fixture.load("jobs.yaml")
        #expect(!config.hasErrors)
        return config.jobs
    }

    @Test func aJobAddedMovesNoOtherAndNeedsStayTogether() throws {
        let before = try plan()
        let after = try plan(#"  - {id: newcomer, url: "https://example.org/new"}"#)
        var covered = Set<String>()
        for index in 1...4 {
            let shard = try Shard(index: index, count: 4)
            let old = Set(shard.select(before).map(\.id)), new = Set(shard.select(after).map(\.id))
            #expect(new.subtracting(["newcomer"]) == old, "shard \(index): the newcomer moved nothing")
            let group = Set(["root", "middle", "leaf"]).intersection(old)
            #expect(group.isEmpty || group.count == 3, "shard \(index) has \(group) of the needs chain")
            #expect(covered.isDisjoint(with: old))
            covered.formUnion(old)
        }
        #expect(covered.count == before.count, "the shards cover the plan, each job once")
    }

    @Test func sizesAreEvenForSequentialAndForMatrixIDs() throws {
        let jobs = try plan(pages: 10_000)
        let sizes = try (1...4).map { try Shard(index: $0, count: 4).select(jobs).count }
        #expect(sizes.allSatisfy { abs($0 - jobs.count / 4) <= jobs.count / 40 }, "\(sizes)")
    }

    @Test func theIndexCanComeFromKubernetesAndMistakesAreRefused() throws {
        let jobs = try plan(pages: 50)
        let indexed = try Shard(parsing: "index-env=JOB_COMPLETION_INDEX/5", environment: ["JOB_COMPLETION_INDEX": "2"])
        #expect(indexed == (try Shard(index: 3, count: 5)))
        #expect(indexed.select(jobs).map(\.id) == (try Shard(parsing: "3/5", environment: [:])).select(jobs).map(\.id))
        for bad in ["5/4", "0/4", "two/4", "index-env=NOPE/4", "4"] {
            #expect(throws: ShardError.self, "\(bad)") { _ = try Shard(parsing: bad, environment: [:]) }
        }
    }
}
