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
        "request.finished": ["ts", "level", "event", "run_id", "job", "method", "url", "attempt", "status", "bytes", "duration_ms", "cache", "http_version"],
        "request.failed": ["ts", "level", "event", "run_id", "job", "method", "url", "attempt", "error", "message", "status"],
        "request.retrying": ["ts", "level", "event", "run_id", "job", "method", "url", "attempt", "reason", "delay_ms", "retry_after"],
        "run.finished": ["ts", "level", "event", "run_id", "succeeded", "failed", "skipped", "up_to_date", "cached", "cache_hits",
                         "cache_revalidated", "cache_stale", "cache_bytes", "duration_ms", "bytes"],
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

    @Test func timestampsAreRFC3339UTCWithMilliseconds() throws {
        #expect(LogFormatting.timestamp(Date(timeIntervalSince1970: 1_795_262_400.042)) == "2026-11-21T12:00:00.042Z")
        #expect(LogFormatting.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        // Dates are computed without gmtime_r: compare with it across leap days, centuries and 2038.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
        var seconds = -2_208_988_800  // 1900-01-01
        while seconds < 7_258_118_400 {  // 2200-01-01
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(LogFormatting.timestamp(date) == formatter.string(from: date))
            seconds += 86_400 * 13 + 3_607  // every 13 days and an hour, so times of day vary too
        }
        for leap in ["2000-02-29", "2024-02-29", "2100-03-01", "1904-02-29"] {
            let date = try #require(formatter.date(from: leap + "T23:59:59.500Z"))
            #expect(LogFormatting.timestamp(date) == leap + "T23:59:59.500Z")
        }
    }

    /// JSON string literals (the JSON log, JSON bodies, diagnostics) are the bytes `JSONEncoder`
    /// writes for the same string: quotes, backslashes, slashes, control characters, UTF-8.
    @Test func jsonStringsMatchJSONEncoder() throws {
        let samples = ["plain", "say \"hi\" \\ back/slash", "tab\tnew\nline\rret", "\u{08}\u{0C}\u{01}\u{1F}\u{7F}", "café 😀 ∑", ""]
        for sample in samples {
            let encoded = String(decoding: try JSONEncoder().encode(sample), as: UTF8.self)
            #expect(JSONText.quote(sample) == encoded, "\(sample.debugDescription)")
        }
        #expect(JSONText.quote("a/b", escapeSlash: false) == "\"a/b\"")
    }

    /// The text log's logfmt: plain values bare, values a reader would split (space, quote, `=`,
    /// control characters, empty) double-quoted with JSON escapes; UTF-8 kept as it is.
    @Test func textLogLinesQuoteWhatLogfmtReadersWouldSplit() {
        var line = LogLine(level: "warn", event: "job.finished", time: timespec(tv_sec: 1_795_262_400, tv_nsec: 7_000_000))
        line.field("job", "f[n=1]")
        line.field("plain", "a/b.json")
        line.field("message", "say \"hi\"\tnow\n")
        line.field("empty", "")
        line.field("bell", "\u{07}")
        line.field("name", "café")
        line.field("bytes", Int64(16_384))
        line.field("delta", -42)
        line.field("zero", 0)
        #expect(line.text == "2026-11-21T12:00:00.007Z warn  job.finished job=\"f[n=1]\" plain=a/b.json "
            + "message=\"say \\\"hi\\\"\\tnow\\n\" empty=\"\" bell=\"\\u0007\" name=café bytes=16384 delta=-42 zero=0\n")
        #expect(LogLine(level: "error", event: "e", time: timespec(tv_sec: 0, tv_nsec: 999_999_999)).text == "1970-01-01T00:00:00.999Z error e\n")
    }

    /// Past `jobLinesUpTo` jobs, the text log has no line per job that went well (a progress line
    /// every 10 s instead), but still one per failure; the progress line's pieces are checked here.
    @Test func aBigRunsTextLogKeepsOnlyFailures() async throws {
        let server = try await TestServer.start()
        let count = TextLogMonitor.jobLinesUpTo + 20
        let fixture = try ConfigFixture(["ids.txt": (1...count).map(String.init).joined(separator: "\n"), "jobs.yaml": """
            version: 1
            settings: {concurrency: 16, retry: {limit: 0}}
            jobs:
              - {id: item, url: "${BASE}/echo?id={{row.line}}", from: {file: ids.txt}, key: "{{row.line}}"}
              - {id: broken, url: "${BASE}/status/500"}
            """])
        let config = fixture.load("jobs.yaml", environment: ["BASE": server.baseURL], mode: .run)
        let text = LockedBox("")
        let monitor = TextLogMonitor(redactor: config.redactor) { line in text.withLock { $0 += line } }
        _ = await Runner(config: config, plan: try RunPlan(config: config), monitors: [monitor]).run()
        let lines = text.withLock { $0 }.split(separator: "\n")
        #expect(lines.contains { $0.contains("run.started") && $0.contains("jobs=\(count + 1)") })
        #expect(!lines.contains { $0.contains("outcome=succeeded") }, "no line per successful job")
        #expect(lines.contains { $0.contains("job.finished job=broken outcome=failed") })
        var progress = JobProgress(total: 1_000)
        for _ in 0..<250 { progress.count(JobResult(job: "j", outcome: .succeeded)) }
        #expect(progress.rateAndETA(over: 10) == "25 jobs/s · ETA 30s")
        #expect([JobProgress.eta(seconds: 428), JobProgress.eta(seconds: 7_500)] == ["7m08s", "2h05m"])
        progress.failures = ["timeout": 9, "status": 3, "dns": 1, "tls": 1]
        #expect(progress.failuresByCode == "timeout 9, status 3, dns 1, 1 more codes")
        try await server.shutdown()
    }
}
