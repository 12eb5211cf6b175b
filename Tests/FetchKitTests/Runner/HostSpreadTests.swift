import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// `per_host` below `concurrency`: the queue hands a worker the next job whose host has room
/// (`JobQueue.HostSpread`), from the written-out jobs and from a data file alike.
@Suite struct HostSpreadTests {
    /// Runs `jobs` (with `files` beside it) against `server`; `${PORT}` is the server's port.
    private func run(_ server: TestServer, _ jobs: String, files: [String: String] = [:]) async throws -> RunSummary {
        let port = try #require(URL(string: server.baseURL)?.port)
        var all = files
        all["jobs.yaml"] = "version: 1\n" + jobs.replacingOccurrences(of: "${PORT}", with: String(port))
        let fixture = try ConfigFixture(all)
        let config = fixture.load("jobs.yaml", mode: .run)
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
        let plan = try RunPlan(config: config)
        return await Runner(config: config, plan: plan).run()
    }

    @Test func aURLsHostIsReadFromItsText() {
        #expect(JobHost.host(inURL: "http://User:pw@Example.COM:8080/a?b#c", complete: false) == "example.com")
        #expect(JobHost.host(inURL: "https://[::1]:8443/x", complete: false) == "::1")
        #expect(JobHost.host(inURL: "http://127.0.0.1?q=1", complete: false) == "127.0.0.1")
        // The authority may go on while no path, query or fragment has begun.
        #expect(JobHost.host(inURL: "http://127.0.0.", complete: false) == nil)
        #expect(JobHost.host(inURL: "http://h", complete: true) == "h")
        #expect(JobHost.host(inURL: "/relative/path", complete: true) == nil)
        #expect(JobHost.host(inURL: "http://:80/", complete: true) == nil)
        // A capture's placeholder, filled in only when the job starts.
        #expect(JobHost.host(inURL: "https://{{jobs.login.region}}.api.test/x", complete: true) == nil)
        // The queue keeps a hash of the lowercased name.
        #expect(JobHost.Key("Example.COM") == JobHost.Key("example.com"))
        #expect(JobHost.Key("a.example") != JobHost.Key("b.example"))
    }

    /// A placeholder in the host is filled from the job's row, matrix or params, as its router would.
    @Test func aJobsHostComesFromItsFilledInURL() throws {
        let fixture = try ConfigFixture([
            "jobs.yaml": """
                version: 1
                jobs:
                  - {id: m, url: "http://{{matrix.h}}.example:81/x", matrix: {h: [A, b]}}
                  - {id: f, url: "https://{{row.host}}/{{row.n}}", from: {file: rows.csv}, key: "{{row.n}}"}
                  - {id: u, url: "http://\(String(repeating: "u", count: 600))@{{matrix.h}}.example/x", matrix: {h: [C]}}
                  - {id: p, url: "http://{{matrix.h}}.example:{{matrix.port}}/x", matrix: {h: [D], port: [8080]}}
                """,
            "rows.csv": "n,host\n1,one.test\n",
        ])
        let config = fixture.load("jobs.yaml", mode: .run)
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
        let plan = try RunPlan(config: config)
        // The third job has a long userinfo; the last one's port is a placeholder.
        #expect(plan.jobs.map(\.firstRequestHost) == ["a.example", "b.example", "c.example", "d.example"].map { JobHost.Key($0) })
        let feed = DataFileFeed(plan.dataFileJobs, shard: plan.shard)
        guard case .job(let job)? = feed.next(results: { _ in nil }) else {
            Issue.record("the data file made no job")
            return
        }
        #expect(job.firstRequestHost == JobHost.Key("one.test"))
    }

    /// Three slow jobs for one host, then six fast ones for another, from a data file, two at a
    /// time and one per host: the slow host's later jobs wait aside while the other worker runs
    /// every fast job, all of them before the second slow request. The first slow response is
    /// held until seven requests have come (or 10 s): with the slow host's second job holding the
    /// other worker, only the timeout would free it, and the second slow request would come before
    /// any fast one. (Order, not time: a loaded machine may delay the fast ones, never reorder them.)
    @Test func aDataFilesJobsForAFullHostWaitAsideWhileAnotherHostsRun() async throws {
        let server = try await TestServer.start()
        let rows = (1...3).map { "127.0.0.1,10000,\($0)" } + (1...6).map { "localhost,0,\($0)" }
        let summary = try await run(server, """
            settings: {concurrency: 2, per_host: 1}
            jobs:
              - id: r
                url: "http://{{row.host}}:${PORT}/delay/{{row.ms}}?n={{row.n}}&until_requests=7"
                from: {file: rows.csv}
                key: "{{row.host}}-{{row.n}}"
            """, files: ["rows.csv": "host,ms,n\n" + rows.joined(separator: "\n") + "\n"])
        #expect(summary.count(.succeeded) == 9)
        let order = server.state.requests.map { $0.uri.hasPrefix("/delay/10000") ? "slow" : "fast" }
        #expect(order.count == 9)
        let secondSlow = try #require(order.indices.filter { order[$0] == "slow" }.dropFirst().first)
        #expect(order.prefix(secondSlow).filter { $0 == "fast" }.count == 6, "arrival order: \(order)")
        #expect(server.state.peakRequestsInFlight <= 2)
        try await server.shutdown()
    }

    /// Written-out jobs set aside when `fail_fast` stops the run are reported with the others
    /// not started, in plan order. The first job's response is held (10 s at most) so that its
    /// host stays full until the run stops, however slowly a loaded machine gets there.
    @Test func writtenOutJobsSetAsideAreReportedInPlanOrder() async throws {
        let server = try await TestServer.start()
        let summary = try await run(server, """
            settings: {concurrency: 2, per_host: 1, fail_fast: true, retry: {limit: 0}}
            jobs:
              - {id: a1, url: "http://127.0.0.1:${PORT}/delay/10000?until_requests=99"}
              - {id: a2, url: "http://127.0.0.1:${PORT}/echo"}
              - {id: a3, url: "http://127.0.0.1:${PORT}/echo"}
              - {id: b, url: "http://localhost:${PORT}/status/500"}
              - {id: c, url: "http://localhost:${PORT}/echo"}
            """)
        #expect(summary.stop == .failFast)
        #expect(summary.results.map(\.job) == ["a1", "a2", "a3", "b", "c"])
        let outcomes = Dictionary(uniqueKeysWithValues: summary.results.map { ($0.job, $0.outcome) })
        #expect(outcomes["a2"] == .skipped && outcomes["a3"] == .skipped && outcomes["c"] == .skipped)
        #expect(outcomes["b"] == .failed)
        #expect(!server.state.requests.contains { $0.uri.hasPrefix("/echo") })
        try await server.shutdown()
    }

    /// Jobs waiting aside when `fail_fast` stops the run are skipped as not started, never sent:
    /// the first job's response is held (10 s at most) while the other host's job fails.
    @Test func jobsWaitingAsideAreSkippedWhenTheRunStops() async throws {
        let server = try await TestServer.start()
        let summary = try await run(server, """
            settings: {concurrency: 2, per_host: 1, fail_fast: true, retry: {limit: 0}}
            jobs:
              - id: r
                url: "http://{{row.host}}:${PORT}/{{row.kind}}/{{row.arg}}?until_requests=99"
                from: {file: rows.csv}
                key: "{{row.n}}"
            """, files: ["rows.csv": """
                n,host,kind,arg
                1,127.0.0.1,delay,10000
                2,127.0.0.1,echo,a
                3,127.0.0.1,echo,b
                4,localhost,status,500

                """])
        #expect(summary.stop == .failFast)
        // The failure is the other host's 500, not anything of the held host's.
        #expect(summary.tally.errors["status"] == 1, "\(summary.tally.errors)")
        #expect(server.state.requests.contains { $0.uri.hasPrefix("/status/500") })
        #expect(summary.count(.skipped) == 2)
        #expect(summary.tally.jobs == 4)
        #expect(summary.tally.skipped.allSatisfy { $0.reason == "not started: fail_fast stopped the run" })
        #expect(!server.state.requests.contains { $0.uri.hasPrefix("/echo") })
        try await server.shutdown()
    }
}
