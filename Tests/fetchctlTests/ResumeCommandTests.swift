import Crypto
import Foundation
import FetchKitTesting
import Testing

/// Crash and cron safety on the built binary: `kill -9` mid-download then a rerun, a second run on
/// the same state directory, SIGINT during a download, reports, and `status` after a killed run.
@Suite struct ResumeCommandTests {
    /// byte i of `/bytes/N?seed=0` is (i * 31) & 0xff, a 256-byte period.
    /// Hashed here with swift-crypto, not by a `sha256sum` child whose output this thread would
    /// wait for (a blocked thread of the cooperative pool stalls every test running meanwhile).
    static func generatedSHA256(size: Int) throws -> String {
        let period = (0..<256).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var hasher = SHA256()
        for _ in 0..<(size / 256) { hasher.update(data: period) }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    func text(_ directory: URL, _ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    func size(_ directory: URL, _ name: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path))?[.size] as? Int
    }

    @Test func killedMidDownloadTheRerunResumesAndTheChecksumHolds() async throws {
        let server = try await TestServer.start()
        let total = 16 * 1024 * 1024
        let sum = try Self.generatedSHA256(size: total)
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {output_dir: out}
            jobs:
              - id: big
                url: "${BASE}/bytes/\(total)?stall_after=6291456&stall_ms=30000&key=kill&times=1"
                download: big.bin
                checksum: sha256:\(sum)
            """])
        let first = try FetchctlProcess.start(["run", "jobs.yaml", "--progress", "never"], in: dir, environment: ["BASE": server.baseURL])
        // Wait until the stall point is on disk, then kill without warning.
        let deadline = ContinuousClock.now + .seconds(20)
        while (size(dir, "out/big.bin.part") ?? 0) < 6_291_456, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        kill(first.processIdentifier, SIGKILL)
        await FetchctlProcess.waitForExit(first)
        #expect(first.terminationReason == .uncaughtSignal)
        #expect(size(dir, "out/big.bin.part") == 6_291_456)
        #expect(size(dir, "out/big.bin") == nil)

        // The store is readable after the kill and shows the unfinished run.
        let status = try await FetchctlProcess.run(["status", "jobs.yaml"], in: dir)
        #expect(status.status == 0)
        #expect(status.stdout.contains("did not finish"))

        let second = try await FetchctlProcess.run(["run", "jobs.yaml", "--log-format", "json", "--log-file", "run.log"], in: dir,
                                                   environment: ["BASE": server.baseURL])
        #expect(second.status == 0, "\(second.stderr)")
        let log = text(dir, "run.log")
        #expect(log.contains(#""event":"download.resumed","run_id""#))
        #expect(log.contains(#""offset":6291456"#))
        #expect(log.contains(#""event":"download.verified""#) && log.contains(sum))
        #expect(server.state.requests.last?.header("Range") == "bytes=6291456-")
        #expect(size(dir, "out/big.bin") == total)
        #expect(size(dir, "out/big.bin.part") == nil)

        let after = try await FetchctlProcess.run(["status", "jobs.yaml", "--format", "json"], in: dir)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Any])
        #expect((object["runs"] as? [Any])?.count == 2)
        try await server.shutdown()
    }

    @Test func aSecondRunOnTheSameStateDirectoryExits75() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            jobs:
              - {id: slow, url: "${BASE}/delay/20000"}
            """])
        let first = try FetchctlProcess.start(["run", "jobs.yaml"], in: dir, environment: ["BASE": server.baseURL])
        let deadline = ContinuousClock.now + .seconds(10)
        while server.state.requests.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let second = try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: ["BASE": server.baseURL])
        #expect(second.status == 75)
        #expect(second.stderr.contains("another fetchctl run (pid \(first.processIdentifier)) holds "))
        #expect(server.state.requests.count == 1)
        kill(first.processIdentifier, SIGTERM)
        await FetchctlProcess.waitForExit(first)
        #expect(first.terminationStatus == 143)
        try await server.shutdown()
    }

    @Test func sigintDuringADownloadKeepsThePartAndNothingAtTheDestination() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {output_dir: out}
            jobs:
              - {id: big, url: "${BASE}/bytes/4000000?stall_after=1000000&stall_ms=30000", download: big.bin}
            """])
        let process = try FetchctlProcess.start(["run", "jobs.yaml"], in: dir, environment: ["BASE": server.baseURL])
        let deadline = ContinuousClock.now + .seconds(10)
        while (size(dir, "out/big.bin.part") ?? 0) < 1_000_000, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        kill(process.processIdentifier, SIGINT)
        await FetchctlProcess.waitForExit(process)
        #expect(process.terminationStatus == 130)
        #expect(size(dir, "out/big.bin.part") == 1_000_000)
        #expect(size(dir, "out/big.bin") == nil)
        try await server.shutdown()
    }

    @Test func reportsAreWrittenWhenJobsFail() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {retry: {limit: 0}}
            jobs:
              - {id: ok, url: "${BASE}/echo"}
              - {id: gone, url: "${BASE}/status/404"}
              - {id: later, url: "${BASE}/echo", needs: [gone]}
            """])
        let result = try await FetchctlProcess.run(["run", "jobs.yaml", "--report", "junit", "reports/junit.xml", "--report", "json", "reports/run.json"],
                                                   in: dir, environment: ["BASE": server.baseURL])
        #expect(result.status == 1)
        let junit = text(dir, "reports/junit.xml")
        #expect(junit.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"fetchctl\" tests=\"3\" failures=\"1\" skipped=\"1\""))
        #expect(junit.contains("<testcase classname=\"jobs.yaml\" name=\"ok\""))
        #expect(junit.contains("<failure type=\"status\" message=\"status: HTTP 404 is not in 2xx\">\(server.baseURL)/status/404</failure>"))
        #expect(junit.contains("<skipped message=\"needs gone, which failed\"/>"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(text(dir, "reports/run.json").utf8)) as? [String: Any])
        #expect(json["exit_code"] as? Int == 1)
        #expect(json["failed"] as? Int == 1)
        let jobs = try #require(json["jobs"] as? [[String: Any]])
        #expect(jobs.map { $0["outcome"] as? String } == ["succeeded", "failed", "skipped"])
        #expect(jobs[1]["error"] as? String == "status")
        try await server.shutdown()
    }
}
