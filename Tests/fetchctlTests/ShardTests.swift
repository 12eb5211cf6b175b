import Foundation
import FetchKitTesting
import Testing

/// `--shard I/N`: shards run side by side and fetch every job exactly once, sizes even, a job
/// added moves no other, a job stays with what it needs, `index-env=` reads a Kubernetes index.
@Suite struct ShardTests {
    /// The job ids a `--dry-run` plan lists, in order.
    func plannedIDs(_ plan: String) -> [String] {
        plan.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("# "), !line.hasPrefix("# cache:"), !line.hasPrefix("# shard"), !line.hasPrefix("# tls:"),
                  !line.contains(" jobs, in order") && !line.contains(" job, in order") else { return nil }
            return String(line.dropFirst(2).split(separator: " ").first ?? "")
        }
    }

    @Test func fourShardsSideBySideFetchEveryJobOnce() async throws {
        let server = try await TestServer.start()
        let ids = (0..<10_000).map(String.init).joined(separator: ", ")
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {concurrency: 16, per_host: 16, cache: {policy: reload, behavior: do_not_cache}}
            jobs:
              - {id: item, url: "${BASE}/status/200?n={{matrix.n}}", matrix: {n: [\(ids)]}}
            """])
        let results = try await withThrowingTaskGroup(of: (Int, FetchctlProcess.Result).self) { group in
            for index in 1...4 {
                group.addTask {
                    (index, try await FetchctlProcess.run(["run", "jobs.yaml", "--shard", "\(index)/4", "--progress", "never"], in: dir,
                                                          environment: ["BASE": server.baseURL]))
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (index, result) in results { #expect(result.status == 0, "shard \(index): \(result.stderr.suffix(300))") }
        let uris = server.state.requests.map(\.uri)
        #expect(uris.count == 10_000, "every job fetched once, none twice")
        #expect(Set(uris).count == 10_000)
        // Sizes within ±10% of 2,500, from each shard's own summary line.
        for (index, result) in results {
            let summary = result.stderr.split(separator: "\n").first { $0.contains(" jobs in ") } ?? ""
            let count = Int(summary.split(separator: " ").first ?? "") ?? 0
            #expect((2_250...2_750).contains(count), "shard \(index) ran \(count) jobs: \(summary)")
        }
        // Each shard kept its own state directory (they ran at once: one shared lock would have refused three).
        for index in 1...4 {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(".fetchctl/shard-\(index)-of-4/state.sqlite").path))
        }
        try await server.shutdown()
    }

    @Test func aJobAddedMovesNoOtherAndNeedsStayTogether() async throws {
        func jobs(_ extra: String) -> String {
            """
            version: 1
            jobs:
              - {id: page, url: "https://example.org/p/{{matrix.n}}", matrix: {n: [\((0..<400).map(String.init).joined(separator: ", "))]}}
              - {id: root, url: "https://example.org/root"}
              - {id: middle, url: "https://example.org/middle", needs: [root]}
              - {id: leaf, url: "https://example.org/leaf", needs: [middle]}
            \(extra)
            """
        }
        let before = try FetchctlProcess.directory(with: ["jobs.yaml": jobs("")])
        let after = try FetchctlProcess.directory(with: ["jobs.yaml": jobs(#"  - {id: newcomer, url: "https://example.org/new"}"#)])
        var all = Set<String>()
        for index in 1...4 {
            let old = try await FetchctlProcess.run(["run", "jobs.yaml", "--dry-run", "--shard", "\(index)/4"], in: before)
            let new = try await FetchctlProcess.run(["run", "jobs.yaml", "--dry-run", "--shard", "\(index)/4"], in: after)
            #expect(old.status == 0 && new.status == 0)
            let oldIDs = plannedIDs(old.stdout), newIDs = plannedIDs(new.stdout)
            #expect(Set(newIDs).subtracting(["newcomer"]) == Set(oldIDs), "shard \(index): the newcomer moved nothing")
            #expect(old.stdout.hasPrefix("# shard \(index)/4: \(oldIDs.count) of the plan's 403 jobs"), "\(old.stdout.prefix(80))")
            let group = Set(["root", "middle", "leaf"]).intersection(oldIDs)
            #expect(group.isEmpty || group.count == 3, "shard \(index) has \(group) of the needs chain")
            all.formUnion(oldIDs)
        }
        #expect(all.count == 403, "the shards cover the plan")
    }

    @Test func theIndexCanComeFromKubernetes() async throws {
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            jobs:
              - {id: page, url: "https://example.org/p/{{matrix.n}}", matrix: {n: [\((0..<50).map(String.init).joined(separator: ", "))]}}
            """])
        let direct = try await FetchctlProcess.run(["run", "jobs.yaml", "--dry-run", "--shard", "3/5"], in: dir)
        let indexed = try await FetchctlProcess.run(["run", "jobs.yaml", "--dry-run", "--shard", "index-env=JOB_COMPLETION_INDEX/5"], in: dir,
                                                    environment: ["JOB_COMPLETION_INDEX": "2"])
        #expect(indexed.status == 0)
        #expect(plannedIDs(indexed.stdout) == plannedIDs(direct.stdout))
        #expect(!plannedIDs(direct.stdout).isEmpty)
        for bad in ["5/4", "0/4", "two/4", "index-env=NOPE/4"] {
            let result = try await FetchctlProcess.run(["run", "jobs.yaml", "--shard", bad], in: dir)
            #expect(result.status == 64, "--shard \(bad): \(result.stderr)")
        }
    }
}
