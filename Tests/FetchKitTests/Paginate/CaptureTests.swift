import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// `capture:` against the local server: values from one job's response in a later job's URL,
/// headers, params and auth; secret captures hidden in the log and the state store; a capture
/// that found nothing failing the job that uses it with `capture_missing`.
@Suite struct CaptureTests {
    func run(_ server: TestServer, _ jobs: String, routes: String? = nil, files extra: [String: String] = [:]) async throws -> (RunSummary, ConfigFixture, LoadedConfig) {
        var files = extra.merging(["jobs.yaml": "version: 1\n" + (routes == nil ? "" : "include: [routes.yaml]\n") + "settings: {output_dir: out}\n" + jobs]) { a, _ in a }
        if let routes { files["routes.yaml"] = "version: 1\nservice: api\nbase_url: ${BASE}\nroutes:\n" + routes }
        let fixture = try ConfigFixture(files)
        let config = fixture.load("jobs.yaml", environment: ["BASE": server.baseURL], mode: .run)
        #expect(config.diagnostics.filter { $0.severity == .error }.isEmpty, "\(config.diagnostics)")
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        let writer = try LogWriter(path: fixture.path("run.log"))
        let summary = await Runner(config: config, plan: try RunPlan(config: config), options: Runner.Options(stateStore: store),
                                   monitors: [JSONLinesMonitor(writer: writer, redactor: config.redactor),
                                              StateRecorder(store: store, jobsFile: "jobs.yaml")]).run()
        writer.flush()
        try store.flush()
        return (summary, fixture, config)
    }

    func text(_ fixture: ConfigFixture, _ name: String) -> String {
        (try? String(contentsOfFile: fixture.path(name), encoding: .utf8)) ?? ""
    }

    @Test func aSecretTokenFromOneJobAuthorizesTheNextAndIsWrittenNowhere() async throws {
        let server = try await TestServer.start()
        let (summary, fixture, _) = try await run(server, """
            jobs:
              - id: login
                url: "${BASE}/oauth/token?prefix=captured-secret-"
                method: POST
                encoding: form
                parameters: {grant_type: client_credentials}
                capture: {token: {json: "$.access_token", secret: true}, kind: {json: "$.token_type"}}
              - id: me
                url: "${BASE}/bearer?token={{jobs.login.token}}"
                auth: {bearer: "{{jobs.login.token}}"}
                headers: {X-Token-Kind: "{{jobs.login.kind}}"}
                save: me.json
            """)
        let results = Dictionary(uniqueKeysWithValues: summary.results.map { ($0.job, $0) })
        #expect(results["login"]?.outcome == .succeeded)
        #expect(results["me"]?.outcome == .succeeded, "\(String(describing: results["me"]?.error))")
        let request = try #require(server.state.requests(pathPrefix: "/bearer").first)
        #expect(request.header("Authorization") == "Bearer captured-secret-1")
        #expect(request.header("X-Token-Kind") == "Bearer")
        #expect(text(fixture, "out/me.json") == #"{"authorized":true}"#)
        // The log names the URL with the token hidden; the state store has no trace of it.
        let log = text(fixture, "run.log")
        #expect(!log.isEmpty && !log.contains("captured-secret-1"))
        #expect(log.contains("/bearer?token=<redacted>"))
        for name in [".fetchctl/state.sqlite", ".fetchctl/state.sqlite-wal"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: fixture.path(name)))) ?? Data()
            #expect(bytes.range(of: Data("captured-secret-1".utf8)) == nil, "\(name)")
        }
        #expect(FileManager.default.fileExists(atPath: fixture.path(".fetchctl/state.sqlite")))
        try await server.shutdown()
    }

    @Test func headersAndRegularExpressionsAndRouteParams() async throws {
        let server = try await TestServer.start()
        let (summary, _, _) = try await run(server, """
            jobs:
              - id: file
                url: "${BASE}/bytes/10?seed=3"
                capture: {etag: {header: ETag}, size: {header: content-length}}
              - id: page
                url: "${BASE}/echo?next=item-4711&other=item-1"
                capture: {item: {regex: "item-(\\\\d+)"}, whole: {regex: "other=item-\\\\d"}}
              - id: use
                route: api.show
                params: {id: "{{jobs.page.item}}", tag: "v{{jobs.file.size}}"}
                headers: {If-None-Match: "{{jobs.file.etag}}", X-Whole: "{{jobs.page.whole}}"}
            """, routes: """
              show:
                path: /echo/{{id}}
                params: {id: {type: integer, required: true}, tag: {type: string}}
                query: {tag: "{{tag}}"}
            """)
        #expect(summary.results.allSatisfy { $0.outcome == .succeeded }, "\(summary.results.map { String(describing: $0.error) })")
        let request = try #require(server.state.requests(pathPrefix: "/echo/").first)
        #expect(request.uri == "/echo/4711?tag=v10")
        #expect(request.header("If-None-Match") == "\"v1-10-3\"")
        #expect(request.header("X-Whole") == "other=item-1")
        try await server.shutdown()
    }

    @Test func aCaptureThatFoundNothingFailsTheJobThatUsesItNamingThePath() async throws {
        let server = try await TestServer.start()
        let (summary, fixture, _) = try await run(server, """
            jobs:
              - {id: probe, url: "${BASE}/echo", capture: {cursor: {json: "$.meta.cursor"}}}
              - {id: next, url: "${BASE}/echo?c={{jobs.probe.cursor}}"}
              - {id: independent, url: "${BASE}/echo?x=1"}
            """)
        let results = Dictionary(uniqueKeysWithValues: summary.results.map { ($0.job, $0) })
        #expect(results["probe"]?.outcome == .succeeded)
        #expect(results["independent"]?.outcome == .succeeded)
        let failed = try #require(results["next"])
        #expect(failed.outcome == .failed)
        #expect(failed.error?.code == .captureMissing)
        #expect(failed.error?.message == "job 'next' uses {{jobs.probe.cursor}}, and job 'probe''s response has nothing at json $.meta.cursor (capture 'cursor')")
        #expect(failed.attempts == 0)
        #expect(server.state.requests(pathPrefix: "/echo").count == 2)
        #expect(text(fixture, "run.log").contains(#""error":"capture_missing""#))
        try await server.shutdown()
    }

    @Test func usingACaptureWaitsForItsJobAndIsSkippedWhenItFails() async throws {
        let server = try await TestServer.start()
        let (summary, _, _) = try await run(server, """
            settings: {concurrency: 4}
            jobs:
              - {id: consumer, url: "${BASE}/echo?v={{jobs.slow.value}}"}
              - {id: slow, url: "${BASE}/pages/json?delay_ms=200", capture: {value: {json: "$.items[-1].name"}}}
              - {id: broken, url: "${BASE}/status/500", retry: {limit: 0}, capture: {v: {header: ETag}}}
              - {id: after-broken, url: "${BASE}/echo?v={{jobs.broken.v}}"}
            """.replacingOccurrences(of: "settings: {concurrency: 4}\n", with: ""))
        let results = Dictionary(uniqueKeysWithValues: summary.results.map { ($0.job, $0) })
        #expect(results["consumer"]?.outcome == .succeeded)
        #expect(server.state.requests(pathPrefix: "/echo").map(\.uri) == ["/echo?v=item-10"])
        #expect(results["after-broken"]?.outcome == .skipped)
        try await server.shutdown()
    }

    @Test func aDataFilesJobsTakeCapturesInTheirParams() async throws {
        let server = try await TestServer.start()
        let (summary, _, _) = try await run(server, """
            jobs:
              - {id: probe, url: "${BASE}/pages/json?per_page=1", capture: {first: {json: "$.items[0].id"}}}
              - id: rows
                route: api.item
                from: ids.txt
                key: "{{row.line}}"
                params: {id: "{{jobs.probe.first}}", tag: "{{row.line}}-{{jobs.probe.first}}"}
            """, routes: """
              item:
                path: /echo/item/{{id}}
                params: {id: {type: integer, required: true}, tag: {type: string}}
                query: {tag: "{{tag}}"}
            """, files: ["ids.txt": "a\nb\n"])
        #expect(summary.count(.failed) == 0, "\(summary.results.map { String(describing: $0.error) })")
        #expect(server.state.requests(pathPrefix: "/echo/item/").map(\.uri).sorted() == ["/echo/item/1?tag=a-1", "/echo/item/1?tag=b-1"])
        try await server.shutdown()
    }
}
