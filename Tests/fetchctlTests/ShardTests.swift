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

    /// 2,000 jobs here, at a modest concurrency: the test server runs in the test process, and a
    /// heavier flood delayed other tests' timers by seconds. `.ci/shard-test.py` runs the 10,000.
    @Test func fourShardsSideBySideFetchEveryJobOnce() async throws {
        let server = try await TestServer.start()
        let ids = (0..<2_000).map(String.init).joined(separator: ", ")
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {concurrency: 4, per_host: 4, cache: {policy: reload, behavior: do_not_cache}}
            jobs:
              - {id: item, url: "${BASE}/status/200?n={{matrix.n}}", matrix: {n: [\(ids)]}}
            """])
        let results = try await withThrowingTaskGroup(of: (Int, FetchctlProcess.Result).self) { group in
            for index in 1...4 {
                group.addTask {
                    (index, try await FetchctlProcess.run(["run", "jobs.yaml", "--shard", "\(index)/4", "--progress", "never",
                                                           "--report", "json", "shard-\(index).json"], in: dir,
                                                          environment: ["BASE": server.baseURL]))
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (index, result) in results { #expect(result.status == 0, "shard \(index): \(result.stderr.suffix(300))") }
        let uris = server.state.requests.map(\.uri)
        #expect(uris.count == 2_000, "every job fetched once, none twice")
        #expect(Set(uris).count == 2_000)
        // Sizes within ±15% of 500, from each shard's own summary line.
        for (index, result) in results {
            let summary = result.stderr.split(separator: "\n").first { $0.contains(" jobs in ") } ?? ""
            let count = Int(summary.split(separator: " ").first ?? "") ?? 0
            #expect((425...575).contains(count), "shard \(index) ran \(count) jobs: \(summary)")
        }
        // One report from the four: every job once, as JSON and as JUnit.
        let shards = (1...4).map { "shard-\($0).json" }
        let merged = try await FetchctlProcess.run(["report", "merge", "all.json"] + shards, in: dir)
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(merged.stderr.contains("4 reports, 2000 jobs: 2000 succeeded, 0 failed, 0 skipped"), "\(merged.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("all.json"))) as? [String: Any])
        #expect((report["jobs"] as? [[String: Any]])?.count == 2_000)
        #expect(report["succeeded"] as? Int == 2_000 && report["exit_code"] as? Int == 0)
        let junit = try await FetchctlProcess.run(["report", "merge", "all.xml"] + shards, in: dir)
        #expect(junit.status == 0)
        let xml = try String(contentsOf: dir.appendingPathComponent("all.xml"), encoding: .utf8)
        #expect(xml.contains(#"<testsuites name="fetchctl" tests="2000" failures="0" skipped="0""#), "\(xml.prefix(200))")
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

    /// A failed shard fails the merge's exit code; a job in two reports keeps the later result.
    @Test func mergingKeepsFailuresAndTheLaterResult() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            jobs:
              - {id: ok, url: "${BASE}/status/200"}
              - {id: broken, url: "${BASE}/status/404"}
            """])
        let first = try await FetchctlProcess.run(["run", "jobs.yaml", "--job", "ok", "--report", "json", "a.json"], in: dir,
                                                  environment: ["BASE": server.baseURL])
        let second = try await FetchctlProcess.run(["run", "jobs.yaml", "--report", "json", "b.json"], in: dir, environment: ["BASE": server.baseURL])
        #expect(first.status == 0 && second.status == 1)
        let merged = try await FetchctlProcess.run(["report", "merge", "--format", "junit", "all.xml", "a.json", "b.json"], in: dir)
        #expect(merged.status == 1, "the failed run fails the merge")
        #expect(merged.stderr.contains("warning: job 'ok' is in more than one report"))
        let xml = try String(contentsOf: dir.appendingPathComponent("all.xml"), encoding: .utf8)
        #expect(xml.contains(#"tests="2" failures="1""#), "\(xml.prefix(300))")
        #expect(xml.contains(#"<failure type="status""#))
        let bad = try await FetchctlProcess.run(["report", "merge", "x.json", "jobs.yaml"], in: dir)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("'jobs.yaml' is not a fetchctl JSON report"))
        try await server.shutdown()
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
