import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// The JSON-lines log (SPEC §4): the exact fields of every event, timestamps, and no secrets in any
/// output: log, text log, summary, dry-run.
@Suite struct LogMonitorTests {
    static let secret = "tok-SECRET-7f3a9"

    /// Runs a jobs file that retries, fails and succeeds, with a secret in a header and in a query.
    func runLogged(_ server: TestServer) async throws -> (lines: [[String: Any]], raw: String, text: String, summary: String) {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            settings:
              output_dir: out
              retry: {limit: 1, backoff: {scale: 10ms}}
              headers: {Authorization: "Bearer ${API_TOKEN}"}
            jobs:
              - {id: flaky, url: "${BASE}/flaky/log?fail=1&status=429&retry_after=0&key=${API_TOKEN}", save: flaky.json}
              - {id: missing, url: "${BASE}/status/404?key=${API_TOKEN}"}
              - {id: later, url: "${BASE}/echo", needs: [missing]}
            """])
        let config = fixture.load("jobs.yaml", environment: ["BASE": server.baseURL, "API_TOKEN": Self.secret], mode: .run)
        let logPath = fixture.path("run.log")
        let writer = try LogWriter(path: logPath)
        let text = LockedBox("")
        let monitors: [any EventMonitor] = [
            JSONLinesMonitor(writer: writer, redactor: config.redactor),
            TextLogMonitor(redactor: config.redactor) { line in text.withLock { $0 += line } },
        ]
        let summary = await Runner(config: config, plan: try RunPlan(config: config), options: Runner.Options(runID: "run-1"), monitors: monitors).run()
        writer.close()
        let raw = try String(contentsOfFile: logPath, encoding: .utf8)
        let lines = try raw.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
        return (lines, raw, text.withLock { $0 }, RunSummaryRenderer(redactor: config.redactor).render(summary))
    }

    /// Each event's keys, in the order they are written.
    static let shapes: [String: [String]] = [
        "run.started": ["ts", "level", "event", "run_id", "jobs", "concurrency"],
        "job.started": ["ts", "level", "event", "run_id", "job"],
        "request.started": ["ts", "level", "event", "run_id", "job", "method", "url", "attempt"],
        "request.finished": ["ts", "level", "event", "run_id", "job", "method", "url", "attempt", "status", "bytes", "duration_ms", "cache"],
        "request.failed": ["ts", "level", "event", "run_id", "job", "method", "url", "attempt", "error", "message", "status"],
        "request.retrying": ["ts", "level", "event", "run_id", "job", "method", "url", "attempt", "reason", "delay_ms", "retry_after"],
        "run.finished": ["ts", "level", "event", "run_id", "succeeded", "failed", "skipped", "up_to_date", "cached", "duration_ms", "bytes"],
    ]

    func keys(of raw: Substring) -> [String] {
        // Keys in written order: every `"key":` at the top level of a flat object.
        let pattern = try! Regex(#""([a-z_]+)":"#)
        return raw.matches(of: pattern).compactMap { $0.output[1].substring.map(String.init) }
    }

    @Test func everyEventHasItsExactFields() async throws {
        let server = try await TestServer.start()
        let (lines, raw, _, _) = try await runLogged(server)
        let rawLines = raw.split(separator: "\n")
        for (object, line) in zip(lines, rawLines) {
            let event = try #require(object["event"] as? String)
            #expect(object["run_id"] as? String == "run-1")
            let ts = try #require(object["ts"] as? String)
            #expect(ts.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "ts \(ts)")
            if let shape = Self.shapes[event] { #expect(keys(of: line) == shape, "\(event): \(line)") }
        }
        let events = lines.map { $0["event"] as! String }
        #expect(events.first == "run.started")
        #expect(events.last == "run.finished")
        let finished = lines.filter { $0["event"] as? String == "job.finished" }
        let byJob = Dictionary(uniqueKeysWithValues: finished.map { ($0["job"] as! String, $0) })
        #expect(keys(of: rawLines.first { $0.contains(#""job":"flaky""#) && $0.contains("job.finished") }!) ==
                ["ts", "level", "event", "run_id", "job", "outcome", "status", "bytes", "attempts", "duration_ms"])
        #expect(byJob["flaky"]?["outcome"] as? String == "succeeded")
        #expect(byJob["missing"]?["outcome"] as? String == "failed")
        #expect(byJob["missing"]?["error"] as? String == "status")
        #expect(byJob["missing"]?["level"] as? String == "error")
        #expect(byJob["later"]?["outcome"] as? String == "skipped")
        #expect(byJob["later"]?["reason"] as? String == "needs missing, which failed")
        let retrying = try #require(lines.first { $0["event"] as? String == "request.retrying" })
        #expect(retrying["reason"] as? String == "status 429")
        #expect(retrying["retry_after"] as? Int == 0)
        #expect(retrying["attempt"] as? Int == 1)
        let run = try #require(lines.last)
        #expect(run["succeeded"] as? Int == 1 && run["failed"] as? Int == 1 && run["skipped"] as? Int == 1)
        try await server.shutdown()
    }

    @Test func secretsAppearInNoOutput() async throws {
        let server = try await TestServer.start()
        let (_, raw, text, summary) = try await runLogged(server)
        // The server did receive the secret: the test is about what fetchctl prints.
        #expect(server.state.requests.contains { $0.header("Authorization") == "Bearer \(Self.secret)" })
        for output in [raw, text, summary] {
            #expect(!output.contains(Self.secret))
            #expect(!output.contains("SECRET"))
        }
        #expect(raw.contains("key=<redacted>"))
        #expect(summary.contains("key=<redacted>"))
        try await server.shutdown()
    }

    @Test func timestampsAreRFC3339UTCWithMilliseconds() {
        #expect(LogFormatting.timestamp(Date(timeIntervalSince1970: 1_795_262_400.042)) == "2026-11-21T12:00:00.042Z")
        #expect(LogFormatting.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
    }
}
