import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// `incremental:` against the local server, whose paginated list filters by `since` and can move
/// its records later (`updated_after`): the cursor sent, advanced to the greatest value only after
/// a run in which the job fully succeeded, and never by a failed one.
@Suite struct IncrementalTests {
    let pages = PaginationTests()

    func job(_ query: String) -> String {
        """
        jobs:
          - id: issues
            url: "${BASE}/pages/json?per_page=30\(query)"
            paginate: {next: {json: "$.next"}, items: "$.items"}
            incremental: {param: since, from: "$.items[-1].updated_at", initial: "2026-01-01T00:00:00Z"}
            save_items: issues.jsonl
            retry: {limit: 0}
        """
    }

    func sinceSent(_ server: TestServer) -> [String] {
        server.state.requests(pathPrefix: "/pages/json").map { URLComponents(string: $0.uri)?.queryItems?.first { $0.name == "since" }?.value ?? "-" }
    }

    @Test func theNextRunFetchesOnlyWhatChangedAndAFailedRunAdvancesNothing() async throws {
        let server = try await TestServer.start()
        let (first, fixture) = try await pages.run(server, job(""))
        #expect(first.results.first?.outcome == .succeeded)
        #expect(pages.ids(fixture, "out/issues.jsonl") == Array(1...95))
        #expect(Set(sinceSent(server)) == ["2026-01-01T00:00:00Z"])
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        #expect(try store.incrementalCursor(job: "issues") == "2026-01-01T01:35:00Z")

        // Nothing changed: one request from the cursor, no records, the cursor stays.
        server.state.resetLog()
        let (second, _) = try await pages.run(server, job(""), fixture: fixture)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(sinceSent(server) == ["2026-01-01T01:35:00Z"])
        #expect(pages.ids(fixture, "out/issues.jsonl").isEmpty)
        #expect(try store.incrementalCursor(job: "issues") == "2026-01-01T01:35:00Z")

        // Ten minutes later every record was updated again: the ten after the cursor come, over
        // two pages; page 2 fails, so the cursor does not move.
        server.state.resetLog()
        let (failed, _) = try await pages.run(server, job("&updated_after=10&per_page=5&fail_on=2"), fixture: fixture)
        #expect(failed.results.first?.outcome == .failed)
        #expect(try store.incrementalCursor(job: "issues") == "2026-01-01T01:35:00Z")

        server.state.resetLog()
        let (third, _) = try await pages.run(server, job("&updated_after=10"), fixture: fixture)
        #expect(third.results.first?.outcome == .succeeded)
        #expect(pages.ids(fixture, "out/issues.jsonl") == Array(86...95))
        #expect(try store.incrementalCursor(job: "issues") == "2026-01-01T01:45:00Z")
        try await server.shutdown()
    }

    @Test func aRouteParamTakesTheCursorInItsTypeAndTheGreatestValueWins() async throws {
        let server = try await TestServer.start()
        let (summary, fixture) = try await pages.run(server, """
            jobs:
              - id: since-id
                route: api.after
                incremental: {param: min_id, from: "$.items[*].id", initial: "40"}
              - id: plain
                url: "${BASE}/echo/plain"
                incremental: {param: after, from: "$.nothing", initial: "x"}
            """, routes: """
              after:
                path: /pages/json
                params: {min_id: {type: integer}}
                query: {per_page: 100, from: "{{min_id}}"}
            """)
        #expect(summary.results.allSatisfy { $0.outcome == .succeeded })
        #expect(server.state.requests(pathPrefix: "/pages/json").first?.uri == "/pages/json?from=40&per_page=100")
        #expect(server.state.requests(pathPrefix: "/echo/plain").first?.uri == "/echo/plain?after=x")
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        // Numbers compare as numbers: 95, not "95" < "9".
        #expect(try store.incrementalCursor(job: "since-id") == "95")
        // Nothing found: no cursor recorded, the next run starts from initial again.
        #expect(try store.incrementalCursor(job: "plain") == nil)
        try await server.shutdown()
    }

    @Test func aCrawlCutShortByMaxPagesKeepsItsCursor() async throws {
        let server = try await TestServer.start()
        let (summary, fixture) = try await pages.run(server, """
            jobs:
              - id: capped
                url: "${BASE}/pages/json?per_page=10"
                paginate: {next: {json: "$.next"}, items: "$.items", stop: {max_pages: 2}}
                incremental: {param: since, from: "$.items[*].updated_at", initial: "2026-01-01T00:00:00Z"}
              - id: whole
                url: "${BASE}/pages/json?per_page=50"
                paginate: {next: {json: "$.next"}, items: "$.items"}
                incremental: {param: since, from: "$.items[*].updated_at", initial: "2026-01-01T00:00:00Z"}
            """)
        #expect(summary.results.allSatisfy { $0.outcome == .succeeded })
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        // Pages 3 to 10 were not fetched: moving the cursor to page 2's last record would lose them.
        #expect(try store.incrementalCursor(job: "capped") == nil)
        #expect(try store.incrementalCursor(job: "whole") == "2026-01-01T01:35:00Z")
        try await server.shutdown()
    }
}
