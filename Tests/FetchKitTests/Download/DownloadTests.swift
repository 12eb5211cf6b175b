import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// Resumable downloads against the local server, with a real state store and real files: resume in
/// the same run and across runs, the server's answers (206, 200, 416, 304), checksums, disk full.
@Suite struct DownloadTests {
    /// A jobs file in a fresh directory, run with a state store there; returns the summary, the
    /// events the run emitted, and the fixture.
    func run(_ server: TestServer, _ jobs: String, fixture: ConfigFixture? = nil, resumes: Bool = true,
             recorder: DownloadRecorder = DownloadRecorder()) async throws -> (RunSummary, ConfigFixture) {
        let text = "version: 1\nsettings: {output_dir: out}\n" + jobs
        let fixture = try fixture ?? ConfigFixture(["jobs.yaml": text])
        if !jobs.isEmpty { try text.write(toFile: fixture.path("jobs.yaml"), atomically: true, encoding: .utf8) }  // a rerun may change the jobs
        let config = fixture.load("jobs.yaml", environment: ["BASE": server.baseURL], mode: .run)
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        let options = Runner.Options(stateStore: store, resumes: resumes)
        let summary = await Runner(config: config, plan: try RunPlan(config: config), options: options,
                                   monitors: [recorder, StateRecorder(store: store, jobsFile: "jobs.yaml")]).run()
        try store.flush()
        return (summary, fixture)
    }

    func bytes(_ fixture: ConfigFixture, _ name: String) -> [UInt8]? {
        (try? Data(contentsOf: URL(fileURLWithPath: fixture.path(name)))).map(Array.init)
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        var hasher = ChecksumHasher(.sha256)
        bytes.withUnsafeBytes { hasher.update($0) }
        return hasher.finalize()
    }

    @Test func aDroppedConnectionResumesInTheSameRunWithRange() async throws {
        let server = try await TestServer.start()
        let recorder = DownloadRecorder()
        let (summary, fixture) = try await run(server, """
            jobs:
              - {id: file, url: "${BASE}/bytes/1000000?seed=7&drop_after=300000&key=drop&times=1", download: file.bin, retry: {backoff: {scale: 10ms}}}
            """, recorder: recorder)
        #expect(summary.results.first?.outcome == .succeeded)
        #expect(bytes(fixture, "out/file.bin") == GeneratedBytes.bytes(0..<1_000_000, seed: 7))
        let requests = server.state.requests
        #expect(requests.count == 2)
        #expect(requests[0].header("Range") == nil)
        let resumedAt = try #require(recorder.resumed.first)
        #expect(resumedAt > 0 && resumedAt <= 300_000)
        #expect(requests[1].header("Range") == "bytes=\(resumedAt)-")
        #expect(requests[1].header("If-Range") == "\"v1-1000000-7\"")
        #expect(!FileManager.default.fileExists(atPath: fixture.path("out/file.bin.part")))
        try await server.shutdown()
    }

    @Test func aServerThatIgnoresRangesRestartsFromZero() async throws {
        let server = try await TestServer.start()
        let recorder = DownloadRecorder()
        let (summary, fixture) = try await run(server, """
            jobs:
              - {id: file, url: "${BASE}/bytes/500000?seed=3&ignore_range=1&drop_after=200000&key=ign&times=1", download: f.bin, retry: {backoff: {scale: 10ms}}}
            """, recorder: recorder)
        #expect(summary.results.first?.outcome == .succeeded)
        #expect(bytes(fixture, "out/f.bin") == GeneratedBytes.bytes(0..<500_000, seed: 3))
        #expect(server.state.requests[1].header("Range") != nil)
        #expect(recorder.restarted.map(\.reason) == ["range_ignored"])
        try await server.shutdown()
    }

    @Test func aFileThatChangedBetweenRunsIsFetchedAgainWhole() async throws {
        let server = try await TestServer.start()
        let old = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let new = (0..<450_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        server.state.setFile("data.bin", bytes: old)
        let jobs = """
            jobs:
              - {id: data, url: "${BASE}/files/data.bin?drop_after=100000&key=chg&times=1", download: data.bin, retry: {limit: 0}}
            """
        let (first, fixture) = try await run(server, jobs)
        #expect(first.results.first?.error?.code == .truncated)
        #expect(FileIO.size(fixture.path("out/data.bin.part")).map { $0 > 0 } == true)
        server.state.setFile("data.bin", bytes: new)
        let recorder = DownloadRecorder()
        let (second, _) = try await run(server, jobs, fixture: fixture, recorder: recorder)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(bytes(fixture, "out/data.bin") == new)
        let resumeRequest = try #require(server.state.requests.last)
        #expect(resumeRequest.header("Range")?.hasPrefix("bytes=") == true)
        #expect(recorder.restarted.map(\.reason) == ["changed"])
        try await server.shutdown()
    }

    @Test func a416OnACompletePartFinishesIt() async throws {
        let server = try await TestServer.start()
        let jobs = "jobs:\n  - {id: whole, url: \"${BASE}/bytes/200000?seed=5\", download: w.bin}\n"
        let (first, fixture) = try await run(server, jobs)
        #expect(first.results.first?.outcome == .succeeded)
        // As if the last run died between the last byte and the rename.
        try FileManager.default.moveItem(atPath: fixture.path("out/w.bin"), toPath: fixture.path("out/w.bin.part"))
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        var record = try #require(try store.download(at: fixture.path("out/w.bin")))
        record.completed = false
        try store.saveDownload(record)
        server.state.resetLog()
        let (second, _) = try await run(server, jobs, fixture: fixture)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(second.results.first?.status == 416)
        #expect(server.state.requests.map { $0.header("Range") } == ["bytes=200000-"])
        #expect(bytes(fixture, "out/w.bin") == GeneratedBytes.bytes(0..<200_000, seed: 5))
        try await server.shutdown()
    }

    @Test func aChecksumMismatchFailsAndLeavesNothing() async throws {
        let server = try await TestServer.start()
        let wrong = String(repeating: "0", count: 64)
        let (summary, fixture) = try await run(server, "jobs:\n  - {id: bad, url: \"${BASE}/bytes/100000\", download: bad.bin, checksum: \"sha256:\(wrong)\"}\n")
        let result = try #require(summary.results.first)
        #expect(result.outcome == .failed)
        #expect(result.error?.code == .checksum)
        #expect(result.error?.message.hasPrefix("sha256 mismatch: expected \(wrong), got ") == true)
        #expect(!FileManager.default.fileExists(atPath: fixture.path("out/bad.bin")))
        #expect(!FileManager.default.fileExists(atPath: fixture.path("out/bad.bin.part")))
        #expect(server.state.requests.count == 1)
        try await server.shutdown()
    }

    @Test func aMatchingChecksumIsVerifiedAfterAResume() async throws {
        let server = try await TestServer.start()
        let recorder = DownloadRecorder()
        let sum = Self.sha256(GeneratedBytes.bytes(0..<800_000, seed: 9))
        let (summary, _) = try await run(server, """
            jobs:
              - {id: ok, url: "${BASE}/bytes/800000?seed=9&drop_after=500000&key=sum&times=1", download: ok.bin, checksum: "sha256:\(sum)", retry: {backoff: {scale: 10ms}}}
            """, recorder: recorder)
        #expect(summary.results.first?.outcome == .succeeded)
        #expect(recorder.resumed.count == 1)
        #expect(recorder.verified == [sum])
        try await server.shutdown()
    }

    @Test func aRerunOfAFinishedDownloadIsUpToDateWithoutABody() async throws {
        let server = try await TestServer.start()
        let jobs = "jobs:\n  - {id: same, url: \"${BASE}/bytes/300000?seed=1\", download: s.bin}\n"
        let (_, fixture) = try await run(server, jobs)
        server.state.resetLog()
        let (second, _) = try await run(server, jobs, fixture: fixture)
        let result = try #require(second.results.first)
        #expect(result.outcome == .upToDate)
        #expect(result.status == 304)
        #expect(result.bytes == 0)
        #expect(second.exitStatus == .success)
        #expect(server.state.requests.map { $0.header("If-None-Match") } == ["\"v1-300000-1\""])
        #expect(bytes(fixture, "out/s.bin") == GeneratedBytes.bytes(0..<300_000, seed: 1))
        // A new version on the server is fetched again.
        server.state.resetLog()
        let changed = "jobs:\n  - {id: same, url: \"${BASE}/bytes/300000?seed=1&version=v2\", download: s.bin}\n"
        try "version: 1\nsettings: {output_dir: out}\n\(changed)".write(toFile: fixture.path("jobs.yaml"), atomically: true, encoding: .utf8)
        let (third, _) = try await run(server, "", fixture: fixture)
        #expect(third.results.first?.outcome == .succeeded)
        try await server.shutdown()
    }

    @Test func deletingTheStateDirectoryLosesNoOutput() async throws {
        let server = try await TestServer.start()
        let jobs = "jobs:\n  - {id: kept, url: \"${BASE}/bytes/200000?seed=4\", download: k.bin}\n"
        let (_, fixture) = try await run(server, jobs)
        try FileManager.default.removeItem(atPath: fixture.path(".fetchctl"))
        #expect(bytes(fixture, "out/k.bin") == GeneratedBytes.bytes(0..<200_000, seed: 4))
        // Without the record the next run can't ask conditionally: it fetches the file again, whole.
        let (second, _) = try await run(server, jobs, fixture: fixture)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(bytes(fixture, "out/k.bin") == GeneratedBytes.bytes(0..<200_000, seed: 4))
        #expect(server.state.requests.last?.header("If-None-Match") == nil)
        try await server.shutdown()
    }

    @Test func aLibraryDownloadWithDefaultOptionsIsUpToDateOnRerun() async throws {
        let fixture = try ConfigFixture([:])
        let store = try StateStore(directory: fixture.path("state"))
        try await withSession { server, session in
            let url = server.baseURL + "/bytes/5000?seed=6"
            let first = DownloadSink(destination: fixture.path("lib.bin"), store: store)
            _ = try await session.execute(url, sink: first)
            #expect(!first.isUpToDate)
            // No validator tweaks: the sink answers for the 304 to its own conditional request.
            let second = DownloadSink(destination: fixture.path("lib.bin"), store: store)
            let response = try await session.execute(url, sink: second)
            #expect(response.status == 304)
            #expect(second.isUpToDate)
            #expect(bytes(fixture, "lib.bin") == GeneratedBytes.bytes(0..<5000, seed: 6))
        }
    }

    @Test func noResumeIgnoresThePartAndTheValidators() async throws {
        let server = try await TestServer.start()
        let jobs = "jobs:\n  - {id: fresh, url: \"${BASE}/bytes/300000?seed=2&drop_after=100000&key=nr&times=1\", download: n.bin, retry: {limit: 0}}\n"
        let (first, fixture) = try await run(server, jobs)
        #expect(first.results.first?.outcome == .failed)
        server.state.resetLog()
        let (second, _) = try await run(server, jobs, fixture: fixture, resumes: false)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(server.state.requests.map { $0.header("Range") } == [nil])
        #expect(bytes(fixture, "out/n.bin") == GeneratedBytes.bytes(0..<300_000, seed: 2))
        try await server.shutdown()
    }

    @Test func aRouteMarkedNotResumableNeverSendsARange() async throws {
        let server = try await TestServer.start()
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            service: mirror
            base_url: ${BASE}
            routes:
              file: {path: "/bytes/300000?drop_after=100000&key=nores&times=1", download: {resumable: false}}
            settings: {output_dir: out, retry: {backoff: {scale: 10ms}}}
            jobs:
              - {id: plain, route: mirror.file, download: p.bin}
            """])
        let (summary, _) = try await run(server, "", fixture: fixture)
        #expect(summary.results.first?.outcome == .succeeded)
        #expect(server.state.requests.map { $0.header("Range") } == [nil, nil])
        #expect(bytes(fixture, "out/p.bin") == GeneratedBytes.bytes(0..<300_000, seed: 0))
        try await server.shutdown()
    }

    @Test func aFullDiskFailsOnlyThatJobAndKeepsThePart() async throws {
        let server = try await TestServer.start()
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            settings: {output_dir: out, retry: {limit: 0}}
            jobs:
              - {id: full, url: "${BASE}/bytes/100000", download: full.bin}
              - {id: fine, url: "${BASE}/bytes/1000", download: fine.bin}
            """])
        // Writes to /dev/full fail with ENOSPC: an injected full disk, through the real write path.
        try FileManager.default.createDirectory(atPath: fixture.path("out"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: fixture.path("out/full.bin.part"), withDestinationPath: "/dev/full")
        let (summary, _) = try await run(server, "", fixture: fixture)
        #expect(summary.results.map(\.outcome) == [.failed, .succeeded])
        #expect(summary.results[0].error?.code == .diskFull)
        #expect(summary.results[0].error?.message.contains("No space left on device") == true)
        #expect(!FileManager.default.fileExists(atPath: fixture.path("out/full.bin")))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: fixture.path("out/full.bin.part"))) == "/dev/full")
        try await server.shutdown()
    }

    @Test func anUnwritableDestinationIsAnIOError() async throws {
        let server = try await TestServer.start()
        let fixture = try ConfigFixture(["jobs.yaml": "version: 1\nsettings: {output_dir: out}\njobs:\n  - {id: blocked, url: \"${BASE}/bytes/10\", download: sub/x.bin}\n"])
        // A file where the directory should be.
        try FileManager.default.createDirectory(atPath: fixture.path("out"), withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: fixture.path("out/sub")))
        let (summary, _) = try await run(server, "", fixture: fixture)
        #expect(summary.results.first?.error?.code == .io)
        try await server.shutdown()
    }

    @Test func theStateStoreKeepsRunsJobsAndDownloads() async throws {
        let server = try await TestServer.start()
        let (summary, fixture) = try await run(server, "jobs:\n  - {id: one, url: \"${BASE}/bytes/10\", download: one.bin}\n  - {id: two, url: \"${BASE}/status/404\"}\n")
        let store = try StateStore(directory: fixture.path(".fetchctl"))
        let runs = try store.recentRuns()
        #expect(runs.map(\.id) == [summary.runID])
        let jobs = try store.lastResults()
        #expect(jobs.map(\.job) == ["one", "two"])
        #expect(jobs.map(\.outcome) == ["succeeded", "failed"])
        #expect(jobs[1].error == "status")
        let record = try #require(try store.download(at: fixture.path("out/one.bin")))
        #expect(record.completed)
        #expect(record.etag == "\"v1-10-0\"")
        #expect(record.totalLength == 10)
        try await server.shutdown()
    }

    @Test func jobResultsQueuedInBulkAreAllStoredByFlush() throws {
        // recordJobLater gathers results into a few transactions; flush must write every one of them.
        let fixture = try ConfigFixture([:])
        let store = try StateStore(directory: fixture.path("state"))
        try store.beginRun(id: "bulk", jobsFile: "jobs.yaml", jobs: 500)
        for n in 0..<500 { store.recordJobLater(runID: "bulk", JobResult(job: "job-\(n)", outcome: .succeeded, status: 200, bytes: 1)) }
        try store.flush()
        let jobs = try store.lastResults()
        #expect(jobs.count == 500)
        #expect(Set(jobs.map(\.job)) == Set((0..<500).map { "job-\($0)" }))
    }

    /// Results are inserted 64 rows per statement: every column of every row survives the chunking
    /// (two full statements and a tail), NULLs and text with quotes, newlines and UTF-8 included.
    @Test func everyColumnOfBatchedResultsIsStored() throws {
        let fixture = try ConfigFixture([:])
        let store = try StateStore(directory: fixture.path("state"))
        try store.beginRun(id: "r1", jobsFile: "jobs.yaml", jobs: 150)
        let finished = Date(timeIntervalSince1970: 1_795_262_400.25)
        func result(_ n: Int) -> JobResult {
            switch n % 3 {
            case 0: return JobResult(job: "ok-\(n)", outcome: .succeeded, status: 200, bytes: Int64(n) << 33, attempts: 1 + n % 4,
                                     duration: .milliseconds(n))
            case 1: return JobResult(job: "bad-\(n)", outcome: .failed, status: 503, attempts: 3,
                                     error: FetchError(.status, "it's \"down\"\nagain café #\(n)"), duration: .milliseconds(7))
            default: return JobResult(job: "skip-\(n)", outcome: .skipped, reason: "needs ok-\(n - 2), which failed")
            }
        }
        for n in 0..<150 { store.recordJobLater(runID: "r1", result(n), at: finished) }
        try store.flush()
        let rows = Dictionary(uniqueKeysWithValues: try store.lastResults().map { ($0.job, $0) })
        #expect(rows.count == 150)
        for n in 0..<150 {
            let expected = result(n)
            let row = try #require(rows[expected.job])
            #expect(row.runID == "r1")
            #expect(row.outcome == expected.outcome.rawValue)
            #expect(row.status == expected.status)
            #expect(row.bytes == expected.bytes)
            #expect(row.attempts == expected.attempts)
            #expect(row.error == expected.error?.code.rawValue)
            #expect(row.message == expected.error?.message ?? expected.reason)
            #expect(row.durationMilliseconds == expected.duration.milliseconds)
            #expect(row.finishedAt == finished)
        }
    }

    @Test func aSecondLockOnTheSameDirectoryIsRefusedWithThePID() throws {
        let fixture = try ConfigFixture([:])
        let first = try RunLock(directory: fixture.path("state"))
        #expect(throws: RunLock.Held.self) { try RunLock(directory: fixture.path("state")) }
        do {
            _ = try RunLock(directory: fixture.path("state"))
        } catch let held as RunLock.Held {
            #expect(held.pid == getpid())
            #expect(held.description == "another fetchctl run (pid \(getpid())) holds \(fixture.path("state/lock")); try again when it has finished")
        }
        withExtendedLifetime(first) {}
    }
}

/// Records download events.
final class DownloadRecorder: EventMonitor {
    private let box = LockedBox<(resumed: [Int64], restarted: [(offset: Int64, reason: String)], verified: [String],
                                 split: [(segments: Int, total: Int64, done: Int64)])>(([], [], [], []))
    var split: [(segments: Int, total: Int64, done: Int64)] { box.withLock { $0.split } }
    func downloadDidSplit(job: String?, segments: Int, total: Int64, done: Int64) { box.withLock { $0.split.append((segments, total, done)) } }
    var resumed: [Int64] { box.withLock { $0.resumed } }
    var restarted: [(offset: Int64, reason: String)] { box.withLock { $0.restarted } }
    var verified: [String] { box.withLock { $0.verified } }
    func downloadDidResume(job: String?, offset: Int64) { box.withLock { $0.resumed.append(offset) } }
    func downloadDidRestart(job: String?, offset: Int64, reason: String) { box.withLock { $0.restarted.append((offset, reason)) } }
    func downloadDidVerify(job: String?, algorithm: String, digest: String, bytes: Int64) { box.withLock { $0.verified.append(digest) } }
}
