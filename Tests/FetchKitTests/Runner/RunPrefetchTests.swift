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

    /// Waits until `condition` holds; false if it never did. The bound is generous: with the whole
    /// suite running at once, this machine's two cores left a connection's close unseen for 10 s.
    func eventually(_ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return condition()
    }

    /// `EarlyTransport`: the first job's connection opens while the jobs file loads, before the
    /// command line is even handed to the run, and the run sends its request on it.
    @Test func theFirstJobsConnectionOpensWhileTheFileLoadsAndTheRunUsesIt() async throws {
        let server = try await TestServer.start()
        let files = try fixture(server)
        var run = invocation(files)
        let prefetch = try #require(RunPrefetch.begin(arguments: ["fetchctl", "run", files.path("jobs.yaml")]))
        #expect(try await eventually { server.state.connectionsAccepted == 1 })
        #expect(server.state.requests.isEmpty)
        run.prefetch = prefetch
        let stderr = try LogWriter(path: files.path("stderr.txt"))
        #expect(await run.perform(stdout: stderr, stderr: stderr) == .success)
        #expect(prefetch.use == .taken)
        #expect(server.state.requests(pathPrefix: "/bytes/").count == 1)
        #expect(server.state.connectionsAccepted == 1)
        try await server.shutdown()
    }

    /// A jobs file whose first job is fine and a later one is not: the early connection opened,
    /// nothing is sent on it, and it is closed when the run stops at the config error.
    @Test func aJobsFileWithAnErrorClosesItsEarlyConnectionUnused() async throws {
        let server = try await TestServer.start()
        // The second job's id is the first's again.
        let files = try ConfigFixture(["jobs.yaml": Self.jobs(server.baseURL) + "\n  - {id: page, url: \"\(server.baseURL)/bytes/8\"}\n"])
        var run = invocation(files)
        let prefetch = try #require(RunPrefetch.begin(arguments: ["fetchctl", "run", files.path("jobs.yaml")]))
        #expect(try await eventually { server.state.connectionsAccepted == 1 })
        run.prefetch = prefetch
        let stderr = try LogWriter(path: files.path("stderr.txt"))
        #expect(await run.perform(stdout: stderr, stderr: stderr) == .invalidConfig)
        #expect(try await eventually { server.state.openConnections == 0 },
                "open \(server.state.openConnections), accepted \(server.state.connectionsAccepted), prefetch \(prefetch.use)")
        #expect(server.state.requests.isEmpty)
        try await server.shutdown()
    }

    /// `--offline` opens no socket, early or not.
    @Test func anOfflinePrefetchMakesNoTransport() async throws {
        let offline = try #require(RunPrefetch.begin(arguments: ["fetchctl", "run", "/nonexistent/jobs.yaml", "--offline"]))
        let online = try #require(RunPrefetch.begin(arguments: ["fetchctl", "run", "/nonexistent/jobs.yaml"]))
        #expect(offline.transport == nil)
        #expect(online.transport != nil)
        await offline.discard()
        await online.discard()
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
