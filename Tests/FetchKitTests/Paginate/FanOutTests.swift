import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// `for_each`: jobs made from the records another job's responses (every page) held, against the
/// local server: ids, keys and outputs from the records, a failed source, a source that is not
/// JSON, a matrix source, and a crawl that failed half-way feeding the fan-out of the next run.
@Suite struct FanOutTests {
    let pages = PaginationTests()

    func fetchedIDs(_ server: TestServer, _ prefix: String) -> [Int] {
        server.state.requests(pathPrefix: prefix).compactMap { Int($0.path.dropFirst(prefix.count)) }.sorted()
    }

    @Test func everyRecordOfEveryPageBecomesAJob() async throws {
        let server = try await TestServer.start()
        let (summary, fixture) = try await pages.run(server, """
            jobs:
              - {id: repos, route: api.repos}
              - id: commits
                route: api.commits
                for_each: {job: repos, items: "$[*]", as: repo}
                key: "{{repo.name}}"
                params: {id: "{{repo.id}}"}
                save: "commits/{{repo.name}}.json"
            """, routes: """
              repos:
                path: /pages/link
                query: {per_page: 20}
                paginate: {next: {link_header: next}, items: "$[*]"}
              commits:
                path: /echo/commits/{{id}}
                params: {id: {type: integer, required: true}}
            """)
        #expect(summary.count(.succeeded) == 96, "\(summary.tally)")
        #expect(summary.count(.failed) == 0)
        #expect(fetchedIDs(server, "/echo/commits/") == Array(1...95))
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.path("out/commits"))
        #expect(files.count == 95 && files.contains("item-7.json"))
        // The spool is gone once its records are read.
        #expect(!FileManager.default.fileExists(atPath: fixture.path(".fetchctl/fanout/commits.jsonl")))
        try await server.shutdown()
    }

    @Test func aFailedOrNonJSONSourceSkipsItsFanOut() async throws {
        let server = try await TestServer.start()
        let (summary, _) = try await pages.run(server, """
            jobs:
              - {id: broken, url: "${BASE}/status/503", retry: {limit: 0}}
              - {id: text, url: "${BASE}/status/200"}
              - {id: a, url: "${BASE}/echo/a/{{x.id}}", for_each: {job: broken, as: x}}
              - {id: b, url: "${BASE}/echo/b/{{x.id}}", for_each: {job: text, as: x}}
            """)
        let results = summary.results
        #expect(results.first { $0.job == "broken" }?.outcome == .failed)
        let text = try #require(results.first { $0.job == "text" })
        #expect(text.outcome == .failed && text.error?.code == .validation)
        #expect(text.error?.message.contains("is not JSON") == true)
        #expect(summary.count(.skipped) == 2)
        #expect(server.state.requests(pathPrefix: "/echo").isEmpty)
        try await server.shutdown()
    }

    @Test func aMatrixSourceFeedsOneFanOut() async throws {
        let server = try await TestServer.start()
        let (summary, _) = try await pages.run(server, """
            jobs:
              - id: list
                url: "${BASE}/pages/offset?offset={{matrix.start}}&limit=5"
                matrix: {start: [0, 50]}
              - {id: each, url: "${BASE}/echo/each/{{r.id}}", for_each: {job: list, items: "$.results[*]", as: r}, key: "{{r.id}}"}
            """)
        #expect(summary.count(.failed) == 0, "\(summary.results.map { String(describing: $0.error) })")
        #expect(fetchedIDs(server, "/echo/each/") == [1, 2, 3, 4, 5, 51, 52, 53, 54, 55])
        try await server.shutdown()
    }

    @Test func aCrawlThatFailedHalfWayFeedsTheWholeFanOutNextRun() async throws {
        let server = try await TestServer.start()
        let jobs = """
            jobs:
              - id: list
                url: "${BASE}/pages/json?fail_on=7&fail_times=1"
                paginate: {next: {json: "$.next"}, items: "$.items"}
                retry: {limit: 0}
              - {id: each, url: "${BASE}/echo/each/{{r.id}}", for_each: {job: list, items: "$.items", as: r}}
            """
        let (first, fixture) = try await pages.run(server, jobs)
        #expect(first.results.first { $0.job == "list" }?.outcome == .failed)
        #expect(server.state.requests(pathPrefix: "/echo").isEmpty)
        // Six pages' records wait in the spool.
        let spool = try String(contentsOfFile: fixture.path(".fetchctl/fanout/each.jsonl"), encoding: .utf8)
        #expect(spool.split(separator: "\n").count == 60)
        let (second, _) = try await pages.run(server, jobs, fixture: fixture)
        #expect(second.count(.failed) == 0)
        #expect(second.count(.succeeded) == 96)
        #expect(fetchedIDs(server, "/echo/each/") == Array(1...95))
        #expect(server.state.requests(pathPrefix: "/pages/json").count == 6 + 1 + 4)
        try await server.shutdown()
    }

    @Test func nestedMembersAndScalarRecords() async throws {
        let server = try await TestServer.start()
        let (summary, _) = try await pages.run(server, """
            jobs:
              - {id: gql, url: "${BASE}/pages/graphql", method: POST, encoding: json, parameters: {variables: {first: 3}}}
              - {id: nested, url: "${BASE}/echo/nested/{{n.pageInfo.endCursor}}?more={{n.pageInfo.hasNextPage}}", for_each: {job: gql, items: "$.data.repos", as: n}}
              - {id: names, url: "${BASE}/echo/names/{{n.value}}", for_each: {job: gql, items: "$.data.repos.nodes[*].name", as: n}}
            """)
        #expect(summary.count(.failed) == 0, "\(summary.results.map { String(describing: $0.error) })")
        // One record, the object at $.data.repos: its nested members by dotted path.
        #expect(server.state.requests(pathPrefix: "/echo/nested/").map(\.uri) == ["/echo/nested/c3?more=true"])
        #expect(server.state.requests(pathPrefix: "/echo/names/").map(\.path).sorted() == ["/echo/names/item-1", "/echo/names/item-2", "/echo/names/item-3"])
        try await server.shutdown()
    }
}
