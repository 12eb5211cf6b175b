import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// `paginate:` against the local server's paginated endpoints, with a real state store and real
/// files: every style, every stop rule, loops, `max_pages`, one file a page, JSON Lines of the
/// records, and a run after a failed page continuing where the last one stopped.
@Suite struct PaginationTests {
    /// A jobs file (and optional route file) in a fresh directory, run with a state store there.
    func run(_ server: TestServer, _ jobs: String, routes: String? = nil, fixture: ConfigFixture? = nil,
             recorder: PaginationRecorder = PaginationRecorder()) async throws -> (RunSummary, ConfigFixture) {
        var files = ["jobs.yaml": "version: 1\n" + (routes == nil ? "" : "include: [routes.yaml]\n") + "settings: {output_dir: out}\n" + jobs]
        if let routes { files["routes.yaml"] = "version: 1\nservice: api\nbase_url: ${BASE}\nroutes:\n" + routes }
        let fixture = try fixture ?? ConfigFixture([:])
        for (name, text) in files { try text.write(toFile: fixture.path(name), atomically: true, encoding: .utf8) }
        let config = fixture.load("jobs.yaml", environment: ["BASE": server.baseURL], mode: .run)
        #expect(config.diagnostics.filter { $0.severity == .error }.isEmpty, "\(config.diagnostics)")
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        let summary = await Runner(config: config, plan: try RunPlan(config: config), options: Runner.Options(stateStore: store),
                                   monitors: [recorder]).run()
        try store.flush()
        return (summary, fixture)
    }

    func lines(_ fixture: ConfigFixture, _ name: String) -> [String] {
        ((try? String(contentsOfFile: fixture.path(name), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// The ids of a JSON Lines file's records, in order.
    func ids(_ fixture: ConfigFixture, _ name: String) -> [Int] {
        lines(fixture, name).compactMap { line in
            (try? JSONValue.parse(line))?["id"]?.text.flatMap { Int($0) }
        }
    }

    /// The pages the server served for `path`, as their query strings' `param` values.
    func served(_ server: TestServer, _ path: String, _ param: String, matching: (String) -> Bool = { _ in true }) -> [String] {
        server.state.requests(pathPrefix: path).filter { matching($0.uri) }.map { request in
            URLComponents(string: request.uri)?.queryItems?.first { $0.name == param }?.value ?? "-"
        }
    }

    @Test func linkHeadersAreFollowedToTheLastPage() async throws {
        let server = try await TestServer.start()
        let recorder = PaginationRecorder()
        let (summary, fixture) = try await run(server, """
            jobs:
              - {id: repos, route: api.repos, save_items: repos.jsonl}
            """, routes: """
              repos:
                path: /pages/link
                query: {per_page: 10, absolute: 1}
                paginate: {next: {link_header: next}, items: "$[*]"}
            """, recorder: recorder)
        let result = try #require(summary.results.first)
        #expect(result.outcome == .succeeded, "\(String(describing: result.error))")
        #expect(ids(fixture, "out/repos.jsonl") == Array(1...95))
        #expect(served(server, "/pages/link", "page") == ["-", "2", "3", "4", "5", "6", "7", "8", "9", "10"])
        #expect(result.attempts == 10)
        #expect(result.path == fixture.path("out/repos.jsonl"))
        #expect(recorder.pages.map(\.page) == Array(1...10))
        #expect(recorder.pages.last?.records == 5)
        #expect(recorder.stopped.isEmpty)
        // Nothing left over: no .part, no progress.
        #expect(!FileManager.default.fileExists(atPath: fixture.path("out/repos.jsonl.part")))
        #expect(try StateStore(directory: fixture.path(".fetchctl")).paginationProgress(job: "repos") == nil)
        // Records are written as the server sent them, member order and all.
        #expect(lines(fixture, "out/repos.jsonl").first == #"{"id":1,"name":"item-1","updated_at":"2026-01-01T00:01:00Z"}"#)
        try await server.shutdown()
    }

    @Test func aNextLinkInTheBodyMayBeRelativeAndEachPageIsSavedToItsOwnFile() async throws {
        let server = try await TestServer.start()
        let (summary, fixture) = try await run(server, """
            jobs:
              - id: pages
                url: "${BASE}/pages/json?per_page=30"
                paginate: {next: {json: "$.next"}, items: "$.items"}
                save: "pages/{{page}}.json"
            """)
        #expect(summary.results.first?.outcome == .succeeded)
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.path("out/pages")).sorted()
        #expect(names == ["1.json", "2.json", "3.json", "4.json"])
        let last = try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: fixture.path("out/pages/4.json")))))
        #expect(last["next"] == .null)
        #expect(last["items"].map { JSONPath.records(in: $0) }?.count == 5)
        try await server.shutdown()
    }

    @Test func aCursorGoesInTheQueryOrAtAPathOfAJSONBody() async throws {
        let server = try await TestServer.start()
        let (summary, fixture) = try await run(server, """
            jobs:
              - {id: cursor, route: api.cursor, save_items: cursor.jsonl}
              - {id: graphql, route: api.graphql, save_items: graphql.jsonl}
            """, routes: """
              cursor:
                path: /pages/cursor
                query: {per_page: 25}
                paginate: {next: {cursor: {from: "$.meta.next_cursor", param: cursor}}, items: "$.data"}
              graphql:
                method: POST
                path: /pages/graphql
                encoding: json
                parameters: {query: "{ repos { nodes { id } } }", variables: {first: 40}}
                paginate:
                  next: {cursor: {from: "$.data.repos.pageInfo.endCursor", param: variables.after}}
                  items: "$.data.repos.nodes"
                  stop: {while: "$.data.repos.pageInfo.hasNextPage"}
            """)
        #expect(summary.results.allSatisfy { $0.outcome == .succeeded })
        #expect(ids(fixture, "out/cursor.jsonl") == Array(1...95))
        #expect(served(server, "/pages/cursor", "cursor") == ["-", "c25", "c50", "c75"])
        #expect(ids(fixture, "out/graphql.jsonl") == Array(1...95))
        let bodies = server.state.requests(pathPrefix: "/pages/graphql").map { String(decoding: $0.body, as: UTF8.self) }
        #expect(bodies.count == 3)
        #expect(try JSONValue.parse(bodies[0])["variables"]?["after"] == nil)
        #expect(try JSONValue.parse(bodies[1])["variables"]?["after"] == .string("c40"))
        #expect(try JSONValue.parse(bodies[2])["variables"]?["first"] == .number("40"))
        try await server.shutdown()
    }

    @Test func offsetsAndPageNumbersStopAtAShortOrEmptyPageATotalOrAStatus() async throws {
        let server = try await TestServer.start()
        let (summary, fixture) = try await run(server, """
            jobs:
              - id: offset
                url: "${BASE}/pages/offset"
                paginate: {next: {offset: {param: offset, limit_param: limit, limit: 20}}, items: "$.results"}
                save_items: offset.jsonl
              - id: exact
                url: "${BASE}/pages/offset?total=60"
                paginate: {next: {offset: {param: offset, limit_param: limit, limit: 20}}, items: "$.results", stop: {total: "$.total"}}
                save_items: exact.jsonl
              - id: empty
                url: "${BASE}/pages/number?total=30"
                paginate: {next: {page: {param: page}}, items: "$.items"}
                save_items: empty.jsonl
              - id: notfound
                url: "${BASE}/pages/number?total=30&notfound=1"
                paginate: {next: {page: {param: page, start: 1}}, stop: {status: 404}}
                save: "nf/{{page}}.json"
            """)
        #expect(summary.results.allSatisfy { $0.outcome == .succeeded }, "\(summary.results.map { String(describing: $0.error) })")
        #expect(ids(fixture, "out/offset.jsonl") == Array(1...95))
        // 95 records by 20: the fifth page has 15, so no sixth request.
        #expect(served(server, "/pages/offset", "offset", matching: { !$0.contains("total=") }) == ["0", "20", "40", "60", "80"])
        #expect(served(server, "/pages/offset", "limit", matching: { !$0.contains("total=") }) == ["20", "20", "20", "20", "20"])
        // total: 60 records in three full pages, and no fourth request for an empty one.
        #expect(ids(fixture, "out/exact.jsonl") == Array(1...60))
        #expect(served(server, "/pages/offset", "offset", matching: { $0.contains("total=60") }) == ["0", "20", "40"])
        // when_empty (the default): page 4 is empty and ends it.
        #expect(ids(fixture, "out/empty.jsonl") == Array(1...30))
        #expect(served(server, "/pages/number", "page", matching: { !$0.contains("notfound") }) == ["1", "2", "3", "4"])
        // status: 404 ends it without a page 4 file and without failing.
        let notFound = try FileManager.default.contentsOfDirectory(atPath: fixture.path("out/nf")).sorted()
        #expect(notFound == ["1.json", "2.json", "3.json"])
        try await server.shutdown()
    }

    @Test func aLoopAndMaxPagesStopWithAWarningAndTheJobSucceeds() async throws {
        let server = try await TestServer.start()
        let recorder = PaginationRecorder()
        let (summary, fixture) = try await run(server, """
            jobs:
              - id: loop
                url: "${BASE}/pages/loop"
                paginate: {next: {json: "$.next"}, items: "$.items"}
                save_items: loop.jsonl
              - id: capped
                url: "${BASE}/pages/json?per_page=5"
                paginate: {next: {json: "$.next"}, items: "$.items", stop: {max_pages: 4}}
                save_items: capped.jsonl
            """, recorder: recorder)
        #expect(summary.results.allSatisfy { $0.outcome == .succeeded })
        // Page 3 links back to page 2: three pages, each once.
        #expect(ids(fixture, "out/loop.jsonl") == Array(1...30))
        #expect(served(server, "/pages/loop", "page") == ["-", "2", "3"])
        #expect(ids(fixture, "out/capped.jsonl") == Array(1...20))
        let stopped = recorder.stopped.sorted { $0.job < $1.job }
        #expect(stopped.map(\.job) == ["capped", "loop"])
        #expect(stopped.map(\.reason) == ["max_pages", "loop"])
        #expect(stopped.map(\.page) == [4, 3])
        try await server.shutdown()
    }

    @Test func aFailedPageFailsTheJobAndTheNextRunContinuesAfterTheLastGoodPage() async throws {
        let server = try await TestServer.start()
        let jobs = """
            jobs:
              - id: crawl
                url: "${BASE}/pages/json?fail_on=7&fail_times=2"
                paginate: {next: {json: "$.next"}, items: "$.items"}
                save_items: all.jsonl
                save: "pages/{{page}}.json"
                retry: {limit: 1, backoff: {scale: 1ms}}
            """
        let (first, fixture) = try await run(server, jobs)
        let failed = try #require(first.results.first)
        #expect(failed.outcome == .failed)
        #expect(failed.error?.code == .status && failed.error?.status == 500)
        // No complete-looking file: the records so far wait in the .part.
        #expect(!FileManager.default.fileExists(atPath: fixture.path("out/all.jsonl")))
        #expect(lines(fixture, "out/all.jsonl.part").count == 60)
        let progress = try #require(try StateStore(directory: fixture.path(".fetchctl")).paginationProgress(job: "crawl"))
        #expect(progress.page == 6 && progress.records == 60)

        server.state.resetLog()
        let recorder = PaginationRecorder()
        let (second, _) = try await run(server, jobs, fixture: fixture, recorder: recorder)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(recorder.resumed == [6])
        #expect(served(server, "/pages/json", "page") == ["7", "8", "9", "10"])
        #expect(ids(fixture, "out/all.jsonl") == Array(1...95))
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.path("out/pages")).count == 10)
        try await server.shutdown()
    }

    @Test func progressFromAnotherPaginationIsNotContinued() async throws {
        let server = try await TestServer.start()
        let (first, fixture) = try await run(server, """
            jobs:
              - {id: crawl, url: "${BASE}/pages/json?fail_on=3", paginate: {next: {json: "$.next"}, items: "$.items"}, save_items: a.jsonl,
                 retry: {limit: 0}}
            """)
        #expect(first.results.first?.outcome == .failed)
        server.state.resetLog()
        // Another first request: the recorded page 2 belongs to the old one.
        let (second, _) = try await run(server, """
            jobs:
              - {id: crawl, url: "${BASE}/pages/json?per_page=50", paginate: {next: {json: "$.next"}, items: "$.items"}, save_items: a.jsonl}
            """, fixture: fixture)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(served(server, "/pages/json", "page") == ["-", "2"])
        #expect(ids(fixture, "out/a.jsonl") == Array(1...95))
        try await server.shutdown()
    }

    @Test func aNextLinkToAnotherHostCarriesNoCredentials() async throws {
        let server = try await TestServer.start()
        let other = server.baseURL.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let (summary, _) = try await run(server, """
            jobs:
              - id: bearer
                url: "${BASE}/pages/json?per_page=50&next_base=\(other)&who=bearer"
                auth: {bearer: static-token}
                paginate: {next: {json: "$.next"}, items: "$.items"}
              - id: oauth
                url: "${BASE}/pages/json?per_page=50&next_base=\(other)&who=oauth"
                auth: {oauth2: {token_url: "${BASE}/oauth/token", client_id: app, client_secret: s3cret}}
                paginate: {next: {json: "$.next"}, items: "$.items"}
            """)
        #expect(summary.results.allSatisfy { $0.outcome == .succeeded }, "\(summary.results.map { String(describing: $0.error) })")
        for who in ["bearer", "oauth"] {
            let requests = server.state.requests(pathPrefix: "/pages/json").filter { $0.uri.contains("who=\(who)") }
            #expect(requests.count == 2)
            #expect(requests.first?.header("Host")?.hasPrefix("127.0.0.1") == true && requests.first?.header("Authorization") != nil)
            #expect(requests.last?.header("Host")?.hasPrefix("localhost") == true && requests.last?.header("Authorization") == nil)
        }
        try await server.shutdown()
    }

    @Test func aCrawlWithAnotherBodyStartsOver() async throws {
        let server = try await TestServer.start()
        func jobs(_ first: Int) -> String {
            """
            jobs:
              - id: gql
                url: "${BASE}/pages/graphql?fail_on=2&fail_times=1"
                method: POST
                encoding: json
                parameters: {variables: {first: \(first)}}
                paginate:
                  next: {cursor: {from: "$.data.repos.pageInfo.endCursor", param: variables.after}}
                  items: "$.data.repos.nodes"
                  stop: {while: "$.data.repos.pageInfo.hasNextPage"}
                save_items: gql.jsonl
                retry: {limit: 0}
            """
        }
        let (first, fixture) = try await run(server, jobs(30))
        #expect(first.results.first?.outcome == .failed)
        // Same URL, another query: the recorded page 1 of 30 records is not this crawl's.
        server.state.resetLog()
        let (second, _) = try await run(server, jobs(50), fixture: fixture)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(server.state.requests(pathPrefix: "/pages/graphql").count == 2)
        #expect(ids(fixture, "out/gql.jsonl") == Array(1...95))
        try await server.shutdown()
    }

    @Test func aPageThatIsNotJSONFailsTheJobWithValidation() async throws {
        let server = try await TestServer.start()
        let (summary, fixture) = try await run(server, """
            jobs:
              - {id: text, url: "${BASE}/status/200", paginate: {next: {json: "$.next"}, items: "$.items"}, save_items: t.jsonl}
            """)
        let result = try #require(summary.results.first)
        #expect(result.outcome == .failed)
        #expect(result.error?.code == .validation)
        #expect(result.error?.message.hasPrefix("page 1 is not JSON") == true)
        #expect(!FileManager.default.fileExists(atPath: fixture.path("out/t.jsonl")))
        try await server.shutdown()
    }
}

extension JSONPath {
    /// The records of an `items` value as they are (its elements, for an array).
    static func records(in value: JSONValue) -> [JSONValue] {
        if case .array(let items) = value { return items }
        return [value]
    }
}

final class PaginationRecorder: EventMonitor {
    private let box = LockedBox<(pages: [(job: String, page: Int, records: Int?)], stopped: [(job: String, page: Int, reason: String)], resumed: [Int])>(([], [], []))
    var pages: [(job: String, page: Int, records: Int?)] { box.withLock { $0.pages } }
    var stopped: [(job: String, page: Int, reason: String)] { box.withLock { $0.stopped } }
    var resumed: [Int] { box.withLock { $0.resumed } }
    func paginationDidFetchPage(job: String, page: Int, records: Int?) { box.withLock { $0.pages.append((job, page, records)) } }
    func paginationDidStop(job: String, page: Int, reason: String) { box.withLock { $0.stopped.append((job, page, reason)) } }
    func paginationDidResume(job: String, page: Int) { box.withLock { $0.resumed.append(page) } }
}
