import Foundation
import FetchKitTesting
import Testing

/// `fetchctl run --shard I/N` and `report merge` with the real binary: every job fetched exactly
/// once, sizes even, the reports merged. The assignment rules themselves are tested without
/// processes (FetchKitTests' ShardAssignmentTests), and `.ci/shard-test.py` runs 10,000 jobs.
@Suite(.serialized) struct ShardTests {
    /// 1,000 jobs here, at a modest concurrency: the test server runs in the test process, and a
    /// heavier flood delayed other tests' timers by seconds. `.ci/shard-test.py` runs the 10,000,
    /// the four shards side by side.
    @Test func fourShardsFetchEveryJobOnceAndTheirReportsMerge() async throws {
        let server = try await TestServer.start()
        let ids = (0..<1_000).map(String.init).joined(separator: ", ")
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {concurrency: 2, per_host: 2, cache: {policy: reload, behavior: do_not_cache}}
            jobs:
              - {id: item, url: "${BASE}/status/200?n={{matrix.n}}", matrix: {n: [\(ids)]}}
            """])
        // One after another here, to keep the test process's load low while the other tests run;
        // .ci/shard-test.py runs the four side by side.
        var results: [Int: FetchctlProcess.Result] = [:]
        for index in 1...4 {
            results[index] = try await FetchctlProcess.run(["run", "jobs.yaml", "--shard", "\(index)/4", "--progress", "never",
                                                            "--report", "json", "shard-\(index).json"], in: dir,
                                                           environment: ["BASE": server.baseURL])
        }
        for (index, result) in results { #expect(result.status == 0, "shard \(index): \(result.stderr.suffix(300))") }
        let uris = server.state.requests.map(\.uri)
        #expect(uris.count == 1_000, "every job fetched once, none twice")
        #expect(Set(uris).count == 1_000)
        // Sizes within ±20% of 250 (at 10,000 jobs, .ci/shard-test.py holds them to ±10%).
        for (index, result) in results {
            let summary = result.stderr.split(separator: "\n").first { $0.contains(" jobs in ") } ?? ""
            let count = Int(summary.split(separator: " ").first ?? "") ?? 0
            #expect((200...300).contains(count), "shard \(index) ran \(count) jobs: \(summary)")
        }
        // One report from the four: every job once, as JSON and as JUnit.
        let shards = (1...4).map { "shard-\($0).json" }
        let merged = try await FetchctlProcess.run(["report", "merge", "all.json"] + shards, in: dir)
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(merged.stderr.contains("4 reports, 1000 jobs: 1000 succeeded, 0 failed, 0 skipped"), "\(merged.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("all.json"))) as? [String: Any])
        #expect((report["jobs"] as? [[String: Any]])?.count == 1_000)
        #expect(report["succeeded"] as? Int == 1_000 && report["exit_code"] as? Int == 0)
        let junit = try await FetchctlProcess.run(["report", "merge", "all.xml"] + shards, in: dir)
        #expect(junit.status == 0)
        let xml = try String(contentsOf: dir.appendingPathComponent("all.xml"), encoding: .utf8)
        #expect(xml.contains(#"<testsuites name="fetchctl" tests="1000" failures="0" skipped="0""#), "\(xml.prefix(200))")
        // Each shard kept its own state directory.
        for index in 1...4 {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(".fetchctl/shard-\(index)-of-4/state.sqlite").path))
        }
        try await server.shutdown()
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
}
