import Foundation
import FetchKitTesting
import Testing

/// `examples/github/crawl.yaml`, as a nightly cron job would run it, on the built binary against the
/// local server's GitHub-like API: every page of the search, a fan-out to every repository's
/// commits, one JSON Lines file per resource; the next night only the new commits; `status` shows
/// the cursors, and `--reset-incremental` starts over.
@Suite struct CrawlExampleTests {
    func lines(_ directory: URL, _ name: String) -> [String] {
        ((try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test func theNightlyCrawlFetchesEverythingThenOnlyWhatChanged() async throws {
        let server = try await TestServer.start()
        let example = FetchctlProcess.root.appendingPathComponent("examples/github")
        let dir = try FetchctlProcess.directory(with: [
            "crawl.yaml": try String(contentsOf: example.appendingPathComponent("crawl.yaml"), encoding: .utf8),
            "github.routes.yaml": try String(contentsOf: example.appendingPathComponent("github.routes.yaml"), encoding: .utf8),
        ])
        let environment = ["GITHUB_API": server.baseURL + "/gh", "GITHUB_TOKEN": "local"]
        let run = ["run", "crawl.yaml", "--progress", "never", "--log-format", "json", "--log-file", "crawl.log"]

        // Night 1: 45 repositories over 3 pages, and every commit of each.
        let first = try await FetchctlProcess.run(run, in: dir, environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(lines(dir, "out/crawl/repos.jsonl").count == 45)
        #expect(server.state.requests(pathPrefix: "/gh/search").count == 3)
        let commitCounts: [Int] = (1...45).map { id in 3 + id % 5 }
        #expect((1...45).map { lines(dir, "out/crawl/commits/owner-\($0 % 4)/repo-\($0).jsonl").count } == commitCounts)
        let status = try await FetchctlProcess.run(["status", "crawl.yaml"], in: dir)
        #expect(status.stdout.contains("Incremental cursors"))
        #expect(status.stdout.contains("commits[owner-1/repo-5]"))

        // Night 2: every third repository has two new commits; each repository is asked only for
        // what came after its own cursor.
        server.state.gitHubDay = 1
        server.state.resetLog()
        let second = try await FetchctlProcess.run(run, in: dir, environment: environment)
        #expect(second.status == 0, "\(second.stderr)")
        let commitRequests = server.state.requests(pathPrefix: "/gh/repos/")
        #expect(commitRequests.count == 45)
        #expect(commitRequests.allSatisfy { $0.uri.contains("since=2026-01-") })
        let added: [Int] = (1...45).map { id in id % 3 == 0 ? 2 : 0 }
        #expect((1...45).map { lines(dir, "out/crawl/commits/owner-\($0 % 4)/repo-\($0).jsonl").count } == added)

        // Starting over fetches every commit again.
        server.state.resetLog()
        let reset = try await FetchctlProcess.run(run + ["--reset-incremental", "commits"], in: dir, environment: environment)
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(reset.stderr.contains("--reset-incremental commits: the recorded cursor is forgotten"))
        #expect(server.state.requests(pathPrefix: "/gh/repos/").allSatisfy { $0.uri.contains("since=2026-01-01T00%3A00%3A00Z") })
        let all: [Int] = (1...45).map { id in 3 + id % 5 + (id % 3 == 0 ? 2 : 0) }
        #expect((1...45).map { lines(dir, "out/crawl/commits/owner-\($0 % 4)/repo-\($0).jsonl").count } == all)

        let unknown = try await FetchctlProcess.run(run + ["--reset-incremental", "comits"], in: dir, environment: environment)
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("no incremental job 'comits' (did you mean 'commits'?)"))
        try await server.shutdown()
    }
}
