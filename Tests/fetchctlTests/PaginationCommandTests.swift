import Foundation
import FetchKitTesting
import Testing

/// Pagination on the built binary: `kill -9` in the middle of a crawl, and the rerun continuing
/// after the last committed page with every record written once.
@Suite struct PaginationCommandTests {
    func text(_ directory: URL, _ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    func ids(_ directory: URL, _ name: String) -> [Int] {
        text(directory, name).split(separator: "\n").compactMap { line in
            ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["id"] as? Int
        }
    }

    @Test func killedAfterPageFiveTheRerunContinuesAtPageSix() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {output_dir: out}
            jobs:
              - id: crawl
                url: "${BASE}/pages/json?slow_on=6&slow_ms=30000"
                paginate: {next: {json: "$.next"}, items: "$.items"}
                save_items: items.jsonl
            """])
        let first = try FetchctlProcess.start(["run", "jobs.yaml", "--progress", "never", "--log-format", "json", "--log-file", "first.log"],
                                              in: dir, environment: ["BASE": server.baseURL])
        // Page 6 answers after 30 s: once page 5 is logged as committed, kill without warning.
        let deadline = ContinuousClock.now + .seconds(20)
        while !text(dir, "first.log").contains(#""event":"pagination.page","run_id""#) || !text(dir, "first.log").contains(#""page":5"#),
              ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        kill(first.processIdentifier, SIGKILL)
        await FetchctlProcess.waitForExit(first)
        #expect(first.terminationReason == .uncaughtSignal)
        #expect(ids(dir, "out/items.jsonl.part") == Array(1...50))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/items.jsonl").path))

        server.state.resetLog()
        let second = try await FetchctlProcess.run(["run", "jobs.yaml", "--log-format", "json", "--log-file", "second.log"], in: dir,
                                                   environment: ["BASE": server.baseURL])
        #expect(second.status == 0, "\(second.stderr)")
        let log = text(dir, "second.log")
        #expect(log.contains(#""event":"pagination.resumed","run_id""#) && log.contains(#""job":"crawl","page":5"#))
        let pages = server.state.requests(pathPrefix: "/pages/json").map { URLComponents(string: $0.uri)?.queryItems?.first { $0.name == "page" }?.value }
        #expect(pages == ["6", "7", "8", "9", "10"])
        #expect(ids(dir, "out/items.jsonl") == Array(1...95))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/items.jsonl.part").path))
        try await server.shutdown()
    }

    /// A fan-out's records pass through a file, not memory: ten times the records, about the same peak.
    @Test func aFanOutOverTenThousandRecordsRunsInFlatMemory() async throws {
        let server = try await TestServer.start()
        var peaks: [Int: Int] = [:]
        for records in [1_000, 10_000] {
            let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
                version: 1
                settings: {concurrency: 16}
                jobs:
                  - id: list
                    url: "${BASE}/pages/json?total=\(records)&per_page=1000"
                    paginate: {next: {json: "$.next"}, items: "$.items"}
                  - {id: each, url: "${BASE}/status/204?i={{r.id}}", for_each: {job: list, items: "$.items", as: r}, key: "{{r.id}}"}
                """])
            let run = try await FetchctlProcess.run(["run", "jobs.yaml", "--progress", "never", "--log-file", "run.log",
                                                     "--metrics-file", "metrics.prom"], in: dir, environment: ["BASE": server.baseURL])
            #expect(run.status == 0, "\(run.stderr)")
            // The process's own peak (VmHWM), as its metrics report it.
            let metrics = (try? String(contentsOf: dir.appendingPathComponent("metrics.prom"), encoding: .utf8)) ?? ""
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("fetchctl_peak_resident_memory_bytes") }
            peaks[records] = line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map { Int($0 / 1024) } ?? 0
            #expect(server.state.requests(pathPrefix: "/status/204").count == records)
            server.state.resetLog()
        }
        let small = try #require(peaks[1_000]), large = try #require(peaks[10_000])
        #expect(small > 10_000, "a real process's peak, not a reading taken before it ran")
        #expect(Double(large) <= 1.3 * Double(small), "peak RSS \(large) KiB at 10,000 records, \(small) KiB at 1,000")
        try await server.shutdown()
    }

    @Test func aDryRunSaysHowAJobPagesCapturesAndStartsIncrementally() async throws {
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            jobs:
              - {id: login, url: "http://127.0.0.1:9/token", method: POST, capture: {token: {json: "$.access_token", secret: true}}}
              - {id: me, url: "http://127.0.0.1:9/me", auth: {bearer: "{{jobs.login.token}}"}}
              - id: issues
                url: "http://127.0.0.1:9/issues"
                paginate: {next: {offset: {param: offset, limit_param: limit, limit: 20}}, items: "$.results"}
                incremental: {param: since, from: "$.results[*].updated_at", initial: "2026-01-01T00:00:00Z"}
                save_items: issues.jsonl
            """])
        let result = try await FetchctlProcess.run(["run", "jobs.yaml", "--dry-run"], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("# captures: token (secret) from json $.access_token"))
        #expect(result.stdout.contains("# me (needs login)"))
        #expect(result.stdout.contains("# pages: offset offset +20, items $.results, up to 1000; records to"))
        #expect(result.stdout.contains("# incremental: since = the recorded cursor, else 2026-01-01T00:00:00Z"))
        #expect(result.stdout.contains("curl 'http://127.0.0.1:9/issues?since=2026-01-01T00%3A00%3A00Z&offset=0&limit=20'"))
    }
}
