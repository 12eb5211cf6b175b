import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// `segments: N`: one file over several connections, against the local server's ranged bytes, with a
/// real state store and real files: the ranges asked for, a dropped segment, a run after a failed
/// one, the fall-backs to one connection, checksums, and a file that changed between runs.
@Suite struct SegmentedDownloadTests {
    let downloads = DownloadTests()

    /// The byte ranges of the ranged GETs the server saw (those whose URI has `matching`), in order of their start.
    static func ranges(_ server: TestServer, matching: String = "") -> [(start: Int, end: Int)] {
        server.state.requests.compactMap { request -> (Int, Int)? in
            guard request.method == "GET", matching.isEmpty || request.uri.contains(matching), let header = request.header("Range") else { return nil }
            let bounds = header.dropFirst("bytes=".count).split(separator: "-").compactMap { Int($0) }
            return bounds.count == 2 ? (bounds[0], bounds[1]) : nil
        }.sorted { $0.0 < $1.0 }
    }

    @Test func aLargeFileIsFetchedAsRangesIntoOneFile() async throws {
        let server = try await TestServer.start()
        let recorder = DownloadRecorder()
        let (summary, fixture) = try await downloads.run(server, """
            jobs:
              - {id: big, url: "${BASE}/bytes/5000000?seed=11", download: {path: big.bin, segments: 4}}
            """, recorder: recorder)
        let result = try #require(summary.results.first)
        #expect(result.outcome == .succeeded, "\(String(describing: result.error))")
        #expect(downloads.bytes(fixture, "out/big.bin") == GeneratedBytes.bytes(0..<5_000_000, seed: 11))
        #expect(server.state.requests.map(\.method) .filter { $0 == "HEAD" }.count == 1)
        let ranges = Self.ranges(server)
        #expect(ranges.map(\.start) == [0, 1_250_000, 2_500_000, 3_750_000])
        #expect(ranges.map(\.end) == [1_249_999, 2_499_999, 3_749_999, 4_999_999])
        #expect(server.state.requests.filter { $0.method == "GET" }.allSatisfy { $0.header("If-Range") == "\"v1-5000000-11\"" })
        #expect(recorder.split.map(\.segments) == [4] && recorder.split.first?.total == 5_000_000)
        #expect(result.bytes == 5_000_000 && result.attempts == 5)
        #expect(!FileManager.default.fileExists(atPath: fixture.path("out/big.bin.part")))
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        #expect(try store.segments(at: fixture.path("out/big.bin")).isEmpty)
        #expect(try store.download(at: fixture.path("out/big.bin"))?.completed == true)
        try await server.shutdown()
    }

    @Test func aDroppedSegmentContinuesFromWhereItStopped() async throws {
        let server = try await TestServer.start()
        // `times=2`: the HEAD is the first request for the key, one segment the second.
        let (summary, fixture) = try await downloads.run(server, """
            jobs:
              - {id: big, url: "${BASE}/bytes/5000000?seed=2&drop_after=300000&key=d&times=2", download: {path: big.bin, segments: 4},
                 retry: {backoff: {scale: 10ms}}}
            """)
        #expect(summary.results.first?.outcome == .succeeded)
        #expect(downloads.bytes(fixture, "out/big.bin") == GeneratedBytes.bytes(0..<5_000_000, seed: 2))
        let starts = Self.ranges(server).map(\.start)
        #expect(starts.count == 5)
        // The retried segment asked for the rest of its range only.
        let planned: Set = [0, 1_250_000, 2_500_000, 3_750_000]
        let resumed = try #require(starts.first { !planned.contains($0) })
        #expect(resumed % 1_250_000 > 0 && resumed % 1_250_000 <= 300_000)
        try await server.shutdown()
    }

    @Test func aRunAfterAFailedOneFetchesOnlyWhatIsMissing() async throws {
        let server = try await TestServer.start()
        let url = "${BASE}/bytes/5000000?seed=4"
        let (first, fixture) = try await downloads.run(server, """
            jobs:
              - {id: big, url: "\(url)&drop_after=600000&key=k&times=2", download: {path: big.bin, segments: 4}, retry: {limit: 0}}
            """)
        #expect(first.results.first?.outcome == .failed)
        #expect(FileIO.size(fixture.path("out/big.bin.part")) == 5_000_000)
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        let left = try store.segments(at: fixture.path("out/big.bin"))
        #expect(left.count == 4)
        let recorder = DownloadRecorder()
        let (second, _) = try await downloads.run(server, """
            jobs:
              - {id: big, url: "\(url)&run=2", download: {path: big.bin, segments: 4}}
            """, fixture: fixture, recorder: recorder)
        #expect(second.results.first?.outcome == .succeeded, "\(String(describing: second.results.first?.error))")
        #expect(downloads.bytes(fixture, "out/big.bin") == GeneratedBytes.bytes(0..<5_000_000, seed: 4))
        // No HEAD: the recorded plan is used; finished segments are not asked for again. (The
        // first run's segments cancelled with it may reach the server late: `run=2` tells them apart.)
        #expect(!server.state.requests.contains { $0.method == "HEAD" && $0.uri.contains("run=2") })
        let asked = Self.ranges(server, matching: "run=2")
        let unfinished = left.filter { !$0.isComplete }
        #expect(asked.count == unfinished.count)
        #expect(asked.map(\.start) == unfinished.map { Int($0.next) })
        #expect(recorder.split.first?.done == left.reduce(0) { $0 + $1.done })
        try await server.shutdown()
    }

    @Test(arguments: ["validators=none", "ignore_range=1"])
    func aServerThatCantSplitGetsOneConnection(query: String) async throws {
        let server = try await TestServer.start()
        let recorder = DownloadRecorder()
        let (summary, fixture) = try await downloads.run(server, """
            jobs:
              - {id: big, url: "${BASE}/bytes/3000000?seed=6&\(query)", download: {path: big.bin, segments: 4}}
            """, recorder: recorder)
        #expect(summary.results.first?.outcome == .succeeded)
        #expect(downloads.bytes(fixture, "out/big.bin") == GeneratedBytes.bytes(0..<3_000_000, seed: 6))
        if query == "validators=none" {
            // Without a validator If-Range can't keep the pieces one file: one GET, whole.
            #expect(server.state.requests.map(\.method) == ["HEAD", "GET"])
            #expect(recorder.split.isEmpty)
        } else {
            // A server that says it takes ranges and ignores them answers a range with the whole
            // file: the pieces go, and one connection (no Range) fetches it in the same run.
            #expect(recorder.split.count == 1)
            #expect(recorder.restarted.map(\.reason) == ["range_ignored"])
            #expect(server.state.requests.last?.header("Range") == nil)
        }
        try await server.shutdown()
    }

    /// A file larger than the free space fails at once with disk_full, before any range is asked for.
    @Test func aFileLargerThanTheFreeSpaceFailsBeforeAnyRange() async throws {
        let server = try await TestServer.start()
        let (summary, fixture) = try await downloads.run(server, """
            jobs:
              - {id: huge, url: "${BASE}/bytes/1000000000000000", download: {path: huge.bin, segments: 4}}
            """)
        let result = try #require(summary.results.first)
        #expect(result.error?.code == .diskFull, "\(String(describing: result.error))")
        #expect(result.error?.message.contains("1000000000000000") == true)
        #expect(server.state.requests.map(\.method) == ["HEAD"])
        #expect(!FileManager.default.fileExists(atPath: fixture.path("out/huge.bin.part")))
        try await server.shutdown()
    }

    @Test func aSmallFileIsNotSplit() async throws {
        let server = try await TestServer.start()
        let recorder = DownloadRecorder()
        let (summary, _) = try await downloads.run(server, """
            jobs:
              - {id: small, url: "${BASE}/bytes/1500000?seed=1", download: {path: s.bin, segments: 4}}
            """, recorder: recorder)
        #expect(summary.results.first?.outcome == .succeeded)
        #expect(server.state.requests.map(\.method) == ["HEAD", "GET"])
        #expect(server.state.requests.last?.header("Range") == nil)
        #expect(recorder.split.isEmpty)
        try await server.shutdown()
    }

    @Test func theWholeFileIsVerifiedAgainstItsChecksum() async throws {
        let server = try await TestServer.start()
        let recorder = DownloadRecorder()
        let sum = DownloadTests.sha256(GeneratedBytes.bytes(0..<3_000_000, seed: 8))
        let (summary, _) = try await downloads.run(server, """
            jobs:
              - {id: ok, url: "${BASE}/bytes/3000000?seed=8", download: {path: ok.bin, segments: 3}, checksum: "sha256:\(sum)"}
              - {id: bad, url: "${BASE}/bytes/3000000?seed=9", download: {path: bad.bin, segments: 3}, checksum: "sha256:\(sum)"}
            """, recorder: recorder)
        #expect(summary.results.first { $0.job == "ok" }?.outcome == .succeeded)
        #expect(recorder.verified == [sum])
        let bad = try #require(summary.results.first { $0.job == "bad" })
        #expect(bad.error?.code == .checksum)
        try await server.shutdown()
    }

    @Test func aFileThatChangedBetweenRunsStartsOver() async throws {
        let server = try await TestServer.start()
        let old = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let new = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        server.state.setFile("data.bin", bytes: old)
        let (first, fixture) = try await downloads.run(server, """
            jobs:
              - {id: data, url: "${BASE}/files/data.bin?drop_after=200000&key=c&times=2", download: {path: d.bin, segments: 3}, retry: {limit: 0}}
            """)
        #expect(first.results.first?.outcome == .failed)
        server.state.setFile("data.bin", bytes: new)
        let recorder = DownloadRecorder()
        let jobs = "jobs:\n  - {id: data, url: \"${BASE}/files/data.bin\", download: {path: d.bin, segments: 3}, retry: {limit: 0}}\n"
        let (second, _) = try await downloads.run(server, jobs, fixture: fixture, recorder: recorder)
        // If-Range no longer matches: the server sends the whole new file; the old pieces go and
        // one connection fetches the new file in the same run.
        #expect(second.results.first?.outcome == .succeeded)
        #expect(recorder.restarted.map(\.reason) == ["changed"])
        #expect(downloads.bytes(fixture, "out/d.bin") == new)
        #expect(!FileManager.default.fileExists(atPath: fixture.path("out/d.bin.part")))
        try await server.shutdown()
    }

    @Test func aFinishedDownloadIsUpToDateOnTheNextRun() async throws {
        let server = try await TestServer.start()
        let jobs = "jobs:\n  - {id: big, url: \"${BASE}/bytes/3000000?seed=3\", download: {path: big.bin, segments: 3}}\n"
        let (first, fixture) = try await downloads.run(server, jobs)
        #expect(first.results.first?.outcome == .succeeded)
        server.state.resetLog()
        let (second, _) = try await downloads.run(server, jobs, fixture: fixture)
        #expect(second.results.first?.outcome == .upToDate)
        #expect(server.state.requests.count == 1)
        #expect(server.state.requests.first?.header("If-None-Match") == "\"v1-3000000-3\"")
        try await server.shutdown()
    }

    /// The job's `segments` wins over its route's, the route's over the settings'; `validate` warns
    /// when `per_host` lets fewer run at once, and a download mapping needs its path.
    @Test func segmentsLayerAndAreChecked() async throws {
        let fixture = try ConfigFixture([
            "mirror.routes.yaml": """
                version: 1
                service: mirror
                base_url: http://127.0.0.1:1
                routes:
                  image: {path: "/images/{{name}}", download: {segments: 3}}
                  plain: {path: "/plain/{{name}}", download: true}
                """,
            "jobs.yaml": """
                version: 1
                include: [mirror.routes.yaml]
                settings: {per_host: 6, download: {segments: 2}}
                jobs:
                  - {id: a, route: mirror.image, params: {name: a}, download: {path: a.iso, segments: 5}}
                  - {id: b, route: mirror.image, params: {name: b}, download: b.iso}
                  - {id: c, route: mirror.plain, params: {name: c}, download: c.iso}
                  - {id: d, route: mirror.plain, params: {name: d}, download: {path: d.iso, segments: 8}}
                  - {id: e, route: mirror.plain, params: {name: e}, download: {segments: 2}}
                """,
        ])
        let config = fixture.load("jobs.yaml")
        let codes = config.diagnostics.map { "\($0.code)@\($0.location.line)" }
        #expect(codes.sorted() == ["missing-key@9", "segments-limited@8"], "\(codes)")
        let session = Session()
        let runner = Runner(config: config, plan: try RunPlan(config: config), options: Runner.Options())
        let context = JobContext(runner: runner, session: session, runID: "test")
        let byID = Dictionary(uniqueKeysWithValues: config.jobs.map { ($0.id, $0) })
        #expect(["a", "b", "c", "d"].map { context.segments(of: byID[$0]!) } == [5, 3, 2, 8])
        try await session.shutdown()
    }
}
