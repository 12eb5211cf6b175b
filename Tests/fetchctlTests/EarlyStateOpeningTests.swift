import Foundation
import FetchKitTesting
import Testing

/// `fetchctl run` opens an existing state directory (its lock, state store and response cache)
/// while the jobs file's jobs are still being expanded and checked. A jobs file found invalid only
/// then must leave that directory as it was, send nothing, and free the lock for the next run; a
/// first run of an invalid file must not create the directory at all.
@Suite struct EarlyStateOpeningTests {
    /// A matrix whose two jobs write the same file: an error found while expanding, after the
    /// settings were read.
    static let invalid = """
        version: 1
        settings: {output_dir: out}
        jobs:
          - id: page
            url: "${BASE}/bytes/10?n={{matrix.n}}"
            matrix: {n: [1, 2]}
            save: same.bin
        """
    static let valid = """
        version: 1
        settings: {output_dir: out}
        jobs:
          - {id: page, url: "${BASE}/bytes/10", save: page.bin}
        """

    func runs(_ directory: URL) async throws -> Int {
        let status = try await FetchctlProcess.run(["status", "jobs.yaml", "--format", "json"], in: directory)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        return (object["runs"] as? [Any])?.count ?? 0
    }

    @Test func anInvalidJobsFileLeavesAnExistingStateDirectoryAsItWasAndFreesItsLock() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": Self.valid])
        let first = try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: ["BASE": server.baseURL])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try await runs(dir) == 1)
        let sent = server.state.requests.count

        try Self.invalid.write(to: dir.appendingPathComponent("jobs.yaml"), atomically: true, encoding: .utf8)
        let bad = try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: ["BASE": server.baseURL])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("both write"))
        #expect(server.state.requests.count == sent)

        // No run was recorded, and the lock the invalid run took early is free again.
        try Self.valid.write(to: dir.appendingPathComponent("jobs.yaml"), atomically: true, encoding: .utf8)
        #expect(try await runs(dir) == 1)
        let again = try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: ["BASE": server.baseURL])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try await runs(dir) == 2)
        try await server.shutdown()
    }

    @Test func aFirstRunOfAnInvalidJobsFileCreatesNoStateDirectory() async throws {
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": Self.invalid])
        let bad = try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: ["BASE": "http://127.0.0.1:9"])
        #expect(bad.status == 2)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent(".fetchctl").path))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out").path))
    }
}
