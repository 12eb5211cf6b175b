import Foundation
import FetchKitTesting
import Testing

/// Data files through the real binary: validate's located diagnostics, a run's reports holding every
/// job (the written-out ones first, in plan order), and status summarising the run.
@Suite struct DataFileCommandTests {
    @Test func validateRunReportsAndStatus() async throws {
        let server = try await TestServer.start()
        var rows = ["id,code"]
        for n in 1...60 { rows.append("\(n),\(n % 12 == 0 ? 404 : 200)") }  // 5 of them fail
        let dir = try FetchctlProcess.directory(with: [
            "ids.csv": rows.joined(separator: "\n") + "\n",
            "bad.csv": "id\n1\n1\n",
            "jobs.yaml": """
                version: 1
                settings: {output_dir: out, retry: {limit: 0}}
                jobs:
                  - {id: first, url: "${BASE}/echo?first=1"}
                  - id: item
                    url: "${BASE}/status/{{row.code}}?id={{row.id}}"
                    from: {file: ids.csv}
                    key: "{{row.id}}"
                    save: "items/{{row.id}}.txt"
                """,
            "bad.yaml": """
                version: 1
                jobs:
                  - {id: item, url: "http://127.0.0.1:1/{{row.id}}", from: bad.csv, key: "{{row.id}}"}
                """,
        ])
        let validated = try await FetchctlProcess.run(["validate", "jobs.yaml"], in: dir, environment: ["BASE": server.baseURL])
        #expect(validated.status == 0)
        #expect(validated.stderr == "ok: 1 file, 0 routes, 61 jobs (60 from 1 data file)\n")
        let bad = try await FetchctlProcess.run(["validate", "bad.yaml"], in: dir)
        #expect(bad.status == 2)
        #expect(bad.stdout == "bad.csv:3:1: error: the key '1' is used twice (first on line 2): job 'item[1]'\n")

        let run = try await FetchctlProcess.run(["run", "jobs.yaml", "--report", "json", "run.json", "--report", "junit", "run.xml"],
                                                in: dir, environment: ["BASE": server.baseURL])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("run.json"))) as? [String: Any])
        let jobs = try #require(json["jobs"] as? [[String: Any]])
        #expect(jobs.count == 61)
        #expect(jobs.first?["job"] as? String == "first", "the written-out job first")
        #expect(Set(jobs.dropFirst().compactMap { $0["job"] as? String }) == Set((1...60).map { "item[\($0)]" }))
        #expect(json["succeeded"] as? Int == 56)
        #expect(json["failed"] as? Int == 5)
        #expect(jobs.filter { $0["outcome"] as? String == "failed" }.compactMap { $0["job"] as? String }.sorted()
                == ["item[12]", "item[24]", "item[36]", "item[48]", "item[60]"])
        let junit = try String(contentsOf: dir.appendingPathComponent("run.xml"), encoding: .utf8)
        #expect(junit.contains("tests=\"61\""))
        #expect(junit.components(separatedBy: "<testcase ").count - 1 == 61)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".jobs-") || $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "no spool or temporary file is left: \(leftovers)")

        let status = try await FetchctlProcess.run(["status", "jobs.yaml"], in: dir)
        #expect(status.status == 0)
        #expect(status.stdout.contains("61 jobs in"), "\(status.stdout)")
        #expect(status.stdout.contains("failed by error code: status 5"), "\(status.stdout)")
        #expect(status.stdout.contains("    item[12]  status: HTTP 404 is not in 2xx"), "\(status.stdout)")
        let listed = try await FetchctlProcess.run(["status", "jobs.yaml", "--jobs", "--format", "json"], in: dir)
        #expect(listed.stdout.split(separator: "\n").count == 61)
        let onlyFailed = try await FetchctlProcess.run(["status", "jobs.yaml", "--jobs", "--outcome", "failed"], in: dir)
        #expect(onlyFailed.stdout.split(separator: "\n").count == 5)
        #expect(run.status == 1)
        try await server.shutdown()
    }

    /// A data file's jobs get their entry's OAuth2 credentials, as written-out jobs do: one token
    /// for all of them, sent as `Bearer` (the entry is in no `jobs:` list the run's authenticators
    /// were gathered from until the fix).
    @Test func dataFileJobsUseTheirEntrysOAuth2Token() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: [
            "ids.txt": "1\n2\n3\n",
            "jobs.yaml": """
                version: 1
                settings: {output_dir: out, retry: {limit: 0}}
                jobs:
                  - id: item
                    url: "${BASE}/bearer?token=df-1&id={{row.line}}"
                    from: {file: ids.txt}
                    key: "{{row.line}}"
                    auth: {oauth2: {token_url: "${BASE}/oauth/token?prefix=df-", client_id: app, client_secret: s3, grant: client_credentials}}
                """,
        ])
        let run = try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: ["BASE": server.baseURL])
        #expect(run.status == 0, "\(run.stderr)")
        let requests = server.state.requests
        #expect(requests.filter { $0.path == "/oauth/token" }.count == 1, "one token for the entry")
        #expect(requests.filter { $0.path == "/bearer" && $0.headers.contains { $0.name == "Authorization" && $0.value == "Bearer df-1" } }.count == 3)
        try await server.shutdown()
    }
}
