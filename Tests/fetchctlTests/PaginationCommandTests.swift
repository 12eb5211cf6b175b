import Foundation
import FetchKitTesting
import Testing

/// Pagination on the built binary: `kill -9` in the middle of a crawl, and the rerun continuing
/// after the last committed page with every record written once.
@Suite struct PaginationCommandTests {
    func text(_ directory: URL, _ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    func ids(_ directory: URL, _ name: String) -> [Int] {
        text(directory, name).split(separator: "\n").compactMap { line in
            ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["id"] as? Int
        }
    }

    @Test func killedAfterPageFiveTheRerunContinuesAtPageSix() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {output_dir: out}
            jobs:
              - id: crawl
                url: "${BASE}/pages/json?slow_on=6&slow_ms=30000"
                paginate: {next: {json: "$.next"}, items: "$.items"}
                save_items: items.jsonl
            """])
        let first = try FetchctlProcess.start(["run", "jobs.yaml", "--progress", "never", "--log-format", "json", "--log-file", "first.log"],
                                              in: dir, environment: ["BASE": server.baseURL])
        // Page 6 answers after 30 s: once page 5 is logged as committed, kill without warning.
        let deadline = ContinuousClock.now + .seconds(20)
        while !text(dir, "first.log").contains(#""event":"pagination.page","run_id""#) || !text(dir, "first.log").contains(#""page":5"#),
              ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        kill(first.processIdentifier, SIGKILL)
        await FetchctlProcess.waitForExit(first)
        #expect(first.terminationReason == .uncaughtSignal)
        #expect(ids(dir, "out/items.jsonl.part") == Array(1...50))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/items.jsonl").path))

        server.state.resetLog()
        let second = try await FetchctlProcess.run(["run", "jobs.yaml", "--log-format", "json", "--log-file", "second.log"], in: dir,
                                                   environment: ["BASE": server.baseURL])
        #expect(second.status == 0, "\(second.stderr)")
        let log = text(dir, "second.log")
        #expect(log.contains(#""event":"pagination.resumed","run_id""#) && log.contains(#""job":"crawl","page":5"#))
        let pages = server.state.requests(pathPrefix: "/pages/json").map { URLComponents(string: $0.uri)?.queryItems?.first { $0.name == "page" }?.value }
        #expect(pages == ["6", "7", "8", "9", "10"])
        #expect(ids(dir, "out/items.jsonl") == Array(1...95))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/items.jsonl.part").path))
        try await server.shutdown()
    }
}
