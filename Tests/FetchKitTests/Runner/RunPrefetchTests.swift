import Foundation
import Testing
@testable import FetchKit
import FetchKitTesting

/// `RunPrefetch`: `fetchctl run FILE` loads its jobs file (and opens its state directory) while
/// the command line is parsed. The guess is made only for command lines whose options can't change
/// what is loaded; a run takes it only when its parsed options match, and otherwise lets go of
/// the lock the prefetch took before taking its own.
@Suite struct RunPrefetchTests {
    static func jobs(_ base: String) -> String {
        """
        version: 1
        settings: {output_dir: out}
        jobs:
          - {id: page, url: "\(base)/bytes/64", save: page.bin}
        """
    }

    /// A jobs file whose state directory exists, so that its opening starts early (and locks it).
    func fixture(_ server: TestServer) throws -> ConfigFixture {
        let files = try ConfigFixture(["jobs.yaml": Self.jobs(server.baseURL)])
        try FileManager.default.createDirectory(atPath: files.path(".fetchctl"), withIntermediateDirectories: true)
        return files
    }

    func invocation(_ files: ConfigFixture) -> RunInvocation {
        var invocation = RunInvocation(jobsFile: files.path("jobs.yaml"))
        invocation.progress = .never
        invocation.logFile = files.path("run.log")
        return invocation
    }

    @Test func theGuessIsMadeOnlyForRunWithAJobsFileFirstAndNoOptionThatChangesWhatIsLoaded() {
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "run", "jobs.yaml"]) == "jobs.yaml")
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "run", "jobs.yaml", "--concurrency", "4", "--log-file", "x.log"]) == "jobs.yaml")
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "run", "jobs.yaml", "--offline"]) == "jobs.yaml")
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "run", "--concurrency", "4", "jobs.yaml"]) == nil)
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "run", "jobs.yaml", "--dry-run"]) == nil)
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "run", "jobs.yaml", "--state-dir=/tmp/s"]) == nil)
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "run", "jobs.yaml", "--shard", "1/2"]) == nil)
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "run", "jobs.yaml", "-h"]) == nil)
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "run", "jobs.yaml", "--", "x"]) == nil)
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "validate", "jobs.yaml"]) == nil)
        #expect(RunPrefetch.guessJobsFile(["fetchctl", "run"]) == nil)
        #expect(RunPrefetch.begin(arguments: ["fetchctl", "status", "jobs.yaml"]) == nil)
    }

    @Test func aRunTakesAPrefetchThatLoadedWhatItAsksFor() async throws {
        let server = try await TestServer.start()
        let files = try fixture(server)
        var run = invocation(files)
        let prefetch = try #require(RunPrefetch.begin(arguments: ["fetchctl", "run", files.path("jobs.yaml")]))
        run.prefetch = prefetch
        let stderr = try LogWriter(path: files.path("stderr.txt"))
        #expect(await run.perform(stdout: stderr, stderr: stderr) == .success)
        #expect(prefetch.use == .taken)
        #expect(FileManager.default.fileExists(atPath: files.path("out/page.bin")))
        #expect(server.state.requests(pathPrefix: "/bytes/").count == 1)
        try await server.shutdown()
    }

    /// `--state-dir` naming the very directory the prefetch locked: the run must get the lock, so
    /// the prefetch has to let it go first (otherwise the run would find it held: exit 75).
    @Test func aRunWithAnotherStateDirectoryOptionDiscardsThePrefetchAndGetsTheLock() async throws {
        let server = try await TestServer.start()
        let files = try fixture(server)
        var run = invocation(files)
        let prefetch = try #require(RunPrefetch.begin(arguments: ["fetchctl", "run", files.path("jobs.yaml")]))
        run.prefetch = prefetch
        run.stateDir = files.path(".fetchctl")
        let stderr = try LogWriter(path: files.path("stderr.txt"))
        let status = await run.perform(stdout: stderr, stderr: stderr)
        stderr.close()
        let said = try String(contentsOfFile: files.path("stderr.txt"), encoding: .utf8)
        #expect(status == .success, "\(said)")
        #expect(prefetch.use == .discarded)
        #expect(server.state.requests(pathPrefix: "/bytes/").count == 1)
        try await server.shutdown()
    }

    @Test func aDryRunDiscardsThePrefetchSendsNothingAndLeavesTheLockFree() async throws {
        let server = try await TestServer.start()
        let files = try fixture(server)
        var run = invocation(files)
        let prefetch = try #require(RunPrefetch.begin(arguments: ["fetchctl", "run", files.path("jobs.yaml")]))
        run.prefetch = prefetch
        run.dryRun = true
        let out = try LogWriter(path: files.path("stdout.txt"))
        let stderr = try LogWriter(path: files.path("stderr.txt"))
        #expect(await run.perform(stdout: out, stderr: stderr) == .success)
        out.close()
        #expect(prefetch.use == .discarded)
        #expect(try String(contentsOfFile: files.path("stdout.txt"), encoding: .utf8).contains("/bytes/64"))
        #expect(server.state.requests.isEmpty)
        // The lock the prefetch took while loading is free again.
        let lock = try RunLock(directory: files.path(".fetchctl"))
        withExtendedLifetime(lock) {}
        try await server.shutdown()
    }
}
