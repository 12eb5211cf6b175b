import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// The metrics a run records, in Prometheus's text format (`.ci/metrics-test.py` reads them with
/// Prometheus's own parser and through a real Pushgateway).
@Suite struct RunMetricsTests {
    @Test func aRunsMetricsInTheTextFormat() async throws {
        let server = try await TestServer.start()
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            settings: {retry: {limit: 1, backoff: {scale: 10ms}}}
            jobs:
              - {id: ok, url: "${BASE}/echo?n={{matrix.n}}", matrix: {n: [1, 2, 3]}}
              - {id: down, url: "${BASE}/status/503"}
            """])
        let config = fixture.load("jobs.yaml", environment: ["BASE": server.baseURL], mode: .run)
        let metrics = RunMetrics(jobsFile: "jobs.yaml", shard: "1/1")
        let summary = await Runner(config: config, plan: try RunPlan(config: config), monitors: [metrics]).run()
        let ended = Date(timeIntervalSince1970: 1_800_000_000)
        metrics.finish(summary, exitCode: summary.exitStatus.rawValue, endedAt: ended, lastSuccess: nil)
        let lines = Set(metrics.text.split(separator: "\n").map(String.init))
        let host = server.baseURL.replacingOccurrences(of: "http://", with: "")
        let labels = #"jobs_file="jobs.yaml",shard="1/1""#
        #expect(lines.contains("# TYPE fetchctl_requests_total counter"))
        #expect(lines.contains(#"fetchctl_requests_total{\#(labels),host="\#(host)",status_class="2xx"} 3"#), "\(lines.sorted())")
        #expect(lines.contains(#"fetchctl_requests_total{\#(labels),host="\#(host)",status_class="5xx"} 2"#))
        #expect(lines.contains(#"fetchctl_retries_total{\#(labels)} 1"#))
        #expect(lines.contains(#"fetchctl_jobs{\#(labels),outcome="succeeded"} 3.0"#))
        #expect(lines.contains(#"fetchctl_jobs{\#(labels),outcome="failed"} 1.0"#))
        #expect(lines.contains(#"fetchctl_job_failures{\#(labels),error="status"} 1.0"#))
        #expect(lines.contains(#"fetchctl_last_run_timestamp_seconds{\#(labels)} 1800000000.0"#))
        #expect(lines.contains(#"fetchctl_run_exit_code{\#(labels)} 1.0"#))
        #expect(lines.contains(#"fetchctl_run_finished{\#(labels)} 1.0"#))
        #expect(!lines.contains { $0.hasPrefix("fetchctl_last_success_timestamp_seconds{") }, "no success yet: no series")
        try await server.shutdown()
    }

    @Test func hostsAndPushgatewayGroups() {
        #expect(RunMetrics.host(of: "https://user:pw@api.example.org:8443/x?y") == "api.example.org:8443")
        #expect(RunMetrics.host(of: "http://127.0.0.1:8080") == "127.0.0.1:8080")
        #expect(MetricsExport.groupURL("http://gw:9091/", jobsFile: "jobs.yaml", shard: "2/8")
                == "http://gw:9091/metrics/job/fetchctl/jobs_file@base64/am9icy55YW1s/shard@base64/Mi84")
    }
}
