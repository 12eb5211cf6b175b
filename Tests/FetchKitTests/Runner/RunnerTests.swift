import Foundation
import FetchKitTesting
import NIOCore
import Testing
@testable import FetchKit

/// The runner against the local server: many saves, needs and skips, selection, fail_fast,
/// max-time, cancellation, atomic output, and per-host limits at run level.
@Suite struct RunnerTests {
    /// Loads `jobs` (a jobs file body under `version: 1`) with BASE set to the server, and runs it.
    func run(_ server: TestServer, _ jobs: String, selecting: [String] = [], options: Runner.Options = Runner.Options(),
             environment: [String: String] = [:], monitors: [any EventMonitor] = []) async throws -> (RunSummary, ConfigFixture) {
        let fixture = try ConfigFixture(["jobs.yaml": "version: 1\n" + jobs])
        let config = fixture.load("jobs.yaml", environment: environment.merging(["BASE": server.baseURL]) { a, _ in a }, mode: .run)
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
        let plan = try RunPlan(config: config, selecting: selecting)
        return (await Runner(config: config, plan: plan, options: options, monitors: monitors).run(), fixture)
    }

    func files(under directory: String) -> [String] {
        (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []).sorted()
    }

    @Test func twoHundredSavesLandWhole() async throws {
        let server = try await TestServer.start()
        let values = (0..<200).map(String.init).joined(separator: ", ")
        let (summary, fixture) = try await run(server, """
            settings: {concurrency: 16, per_host: 4, output_dir: out}
            jobs:
              - id: part
                url: "${BASE}/bytes/4096?seed={{matrix.n}}"
                matrix: {n: [\(values)]}
                save: "parts/{{matrix.n}}.bin"
            """)
        #expect(summary.exitStatus == .success)
        #expect(summary.count(.succeeded) == 200)
        #expect(summary.bytes == 200 * 4096)
        for n in 0..<200 {
            let data = try Data(contentsOf: URL(fileURLWithPath: fixture.path("out/parts/\(n).bin")))
            #expect(Array(data) == GeneratedBytes.bytes(0..<4096, seed: n), "file \(n)")
        }
        #expect(files(under: fixture.path("out/parts")).count == 200)
        #expect(server.state.peakRequestsInFlight <= 4)
        #expect(server.state.peakConnections <= 4)
        try await server.shutdown()
    }

    /// A busy host holds no job slot another host could use: with per_host 1 and concurrency 2, the
    /// slow host's jobs wait their turn while the fast host's run, and neither limit is passed. The
    /// server's arrival order shows it: a fast request arrives while the first slow one (600 ms) is
    /// still being answered. With one worker per slot, both workers took slow jobs first (one of
    /// them waiting for the host), and no fast request came before the second slow one.
    @Test func jobsWaitingForABusyHostDontHoldUpTheOthers() async throws {
        let server = try await TestServer.start()
        let port = try #require(URL(string: server.baseURL)?.port)
        let (summary, _) = try await run(server, """
            settings: {concurrency: 2, per_host: 1}
            jobs:
              - {id: slow, url: "http://127.0.0.1:\(port)/delay/600?n={{matrix.n}}", matrix: {n: [1, 2, 3]}}
              - {id: fast, url: "http://localhost:\(port)/delay/5?n={{matrix.n}}", matrix: {n: [1, 2, 3, 4, 5, 6]}}
            """)
        #expect(summary.count(.succeeded) == 9)
        let order = server.state.requests.map { $0.uri.hasPrefix("/delay/600") ? "slow" : "fast" }
        let secondSlow = try #require(order.indices.filter { order[$0] == "slow" }.dropFirst().first)
        #expect(order.prefix(secondSlow).contains("fast"), "arrival order: \(order)")
        #expect(server.state.peakRequestsInFlight <= 2)
        try await server.shutdown()
    }

    @Test func aJobWhoseNeedsFailedIsSkipped() async throws {
        let server = try await TestServer.start()
        let (summary, _) = try await run(server, """
            settings: {retry: {limit: 0}}
            jobs:
              - {id: broken, url: "${BASE}/status/500"}
              - {id: after, url: "${BASE}/echo", needs: [broken]}
              - {id: after-after, url: "${BASE}/echo", needs: [after]}
              - {id: independent, url: "${BASE}/echo"}
            """)
        let outcomes = Dictionary(uniqueKeysWithValues: summary.results.map { ($0.job, $0.outcome) })
        #expect(outcomes == ["broken": .failed, "after": .skipped, "after-after": .skipped, "independent": .succeeded])
        #expect(summary.results.first { $0.job == "after" }?.reason == "needs broken, which failed")
        #expect(summary.results.first { $0.job == "after-after" }?.reason == "needs after, which was skipped")
        #expect(summary.exitStatus == .jobsFailed)
        #expect(server.state.requests.map(\.path).sorted() == ["/echo", "/status/500"])
        try await server.shutdown()
    }

    /// `fetchctl run` without `--report` asks for no results in plan order: `needs` still sees
    /// every result it waits for, and the tally counts every job.
    @Test func withoutKeptResultsNeedsStillSkipAndTheTallyCountsEveryJob() async throws {
        let server = try await TestServer.start()
        var options = Runner.Options()
        options.keepsResults = false
        let (summary, _) = try await run(server, """
            settings: {retry: {limit: 0}}
            jobs:
              - {id: broken, url: "${BASE}/status/500"}
              - {id: after, url: "${BASE}/echo", needs: [broken]}
              - {id: independent, url: "${BASE}/echo"}
            """, options: options)
        #expect(summary.results.isEmpty)
        #expect(summary.count(.failed) == 1 && summary.count(.skipped) == 1 && summary.count(.succeeded) == 1)
        #expect(server.state.requests.map(\.path).sorted() == ["/echo", "/status/500"])
        try await server.shutdown()
    }

    @Test func needsRunFirst() async throws {
        let server = try await TestServer.start()
        let (summary, _) = try await run(server, """
            settings: {concurrency: 8}
            jobs:
              - {id: last, url: "${BASE}/echo?job=last", needs: [middle]}
              - {id: middle, url: "${BASE}/delay/50?job=middle", needs: [first]}
              - {id: first, url: "${BASE}/delay/50?job=first"}
            """)
        #expect(summary.exitStatus == .success)
        #expect(server.state.requests.map(\.uri) == ["/delay/50?job=first", "/delay/50?job=middle", "/echo?job=last"])
        try await server.shutdown()
    }

    /// Workers with nothing ready wait for the job that blocks the rest, then share the work out
    /// without going over `concurrency`.
    @Test func jobsWaitingOnANeedStartWhenItFinishes() async throws {
        let server = try await TestServer.start()
        // The waiting jobs' requests are held until the server has had four (the first job's and
        // three of theirs), 10 s at most: the three workers' requests overlap however late a busy
        // machine makes one of them (a fixed 600 ms hold was not always enough with the whole
        // suite running at once), and with fewer than three workers they would not.
        let values = (0..<9).map(String.init).joined(separator: ", ")
        let (summary, _) = try await run(server, """
            settings: {concurrency: 3, per_host: 8}
            jobs:
              - {id: first, url: "${BASE}/delay/100?job=first"}
              - id: after
                url: "${BASE}/delay/10000?n={{matrix.n}}&until_requests=4"
                matrix: {n: [\(values)]}
                needs: [first]
            """)
        #expect(summary.exitStatus == .success)
        #expect(summary.count(.succeeded) == 10)
        #expect(server.state.requests.first?.uri == "/delay/100?job=first")
        #expect(server.state.requests.count == 10)
        #expect(server.state.peakRequestsInFlight == 3)
        try await server.shutdown()
    }

    /// A save's temporary file is hidden beside its destination and unique per process and sink.
    @Test func saveTemporaryNamesAreHiddenBesideTheDestination() {
        let pid = getpid()
        let nested = FileSink.save(to: "out/a/b.bin").temporaryPath
        #expect(nested.hasPrefix("out/a/.b.bin.fetchctl-\(pid)-") && nested.hasSuffix(".tmp"))
        let bare = FileSink.save(to: "b.bin").temporaryPath
        #expect(bare.hasPrefix(".b.bin.fetchctl-\(pid)-") && bare.hasSuffix(".tmp"))
        let unicode = FileSink.save(to: "/tmp/données/café.json").temporaryPath
        #expect(unicode.hasPrefix("/tmp/données/.café.json.fetchctl-\(pid)-"))
        #expect(Set((0..<100).map { _ in FileSink.save(to: "out/x").temporaryPath }).count == 100)
    }

    /// A save is written to an unnamed file in the destination's directory where the file system
    /// has them (the test directory's does, as tmpfs and ext4 do) and linked into place at the end:
    /// nothing else ever appears in the directory, an abandoned save leaves nothing, and a save over
    /// an existing file replaces it whole.
    @Test func aSaveLeavesNothingButItsFile() async throws {
        let dir = try TemporaryDirectory.make(prefix: "fetchkit-save")
        let destination = dir + "/sub/page.bin"
        let head = TransportResponseHead(status: 200, headers: HTTPHeaders(), expectedLength: nil)
        func save(_ text: String, finishing: Bool) async throws {
            let sink = FileSink.save(to: destination)
            try sink.open(head)
            try sink.write(ByteBuffer(string: text))
            // Before the end the body has no name: the directory holds nothing new.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/sub").filter { $0 != "page.bin" } == [])
            if finishing { try await sink.finish() } else { await sink.abandon() }
        }
        try await save("first", finishing: false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/sub") == [])
        try await save("first", finishing: true)
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "first")
        try await save("second, longer", finishing: true)
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "second, longer")
        try await save("third", finishing: false)
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "second, longer")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/sub") == ["page.bin"])
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: destination)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o644 & ~Int(Self.umask))
    }

    private static let umask: mode_t = { let old = Glibc.umask(0); Glibc.umask(old); return old }()

    @Test func selectionPullsInWhatAJobNeeds() throws {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            jobs:
              - {id: base, url: "http://127.0.0.1:9/base"}
              - {id: commits, url: "http://127.0.0.1:9/{{matrix.repo}}", matrix: {repo: [a, b]}, needs: [base]}
              - {id: other, url: "http://127.0.0.1:9/other"}
            """])
        let config = fixture.load("jobs.yaml", mode: .run)
        #expect(try RunPlan(config: config, selecting: ["commits[repo=b]"]).jobs.map(\.id) == ["base", "commits[repo=b]"])
        #expect(try RunPlan(config: config, selecting: ["commits"]).jobs.map(\.id) == ["base", "commits[repo=a]", "commits[repo=b]"])
        #expect(try RunPlan(config: config).jobs.count == 4)
        #expect(throws: PlanError.self) { try RunPlan(config: config, selecting: ["comits"]) }
        do {
            _ = try RunPlan(config: config, selecting: ["comits"])
        } catch {
            #expect(error.message == "no job 'comits' in the jobs file (did you mean 'commits'?)")
        }
    }

    @Test func aFailedSaveLeavesNoFileBehind() async throws {
        let server = try await TestServer.start()
        let (summary, fixture) = try await run(server, """
            settings: {retry: {limit: 0}, output_dir: out}
            jobs:
              - {id: missing, url: "${BASE}/status/404", save: data/missing.txt}
              - {id: cut, url: "${BASE}/bytes/300000?drop_after=100000", save: data/cut.bin}
              - {id: fine, url: "${BASE}/bytes/10", save: data/fine.bin}
            """)
        #expect(summary.results.map(\.outcome) == [.failed, .failed, .succeeded])
        #expect(summary.results[0].error?.code == .status)
        #expect(summary.results[1].error?.code == .truncated)
        #expect(files(under: fixture.path("out/data")) == ["fine.bin"])
        try await server.shutdown()
    }

    @Test func failFastStopsTheRun() async throws {
        let server = try await TestServer.start()
        let (summary, _) = try await run(server, """
            settings: {concurrency: 1, fail_fast: true, retry: {limit: 0}}
            jobs:
              - {id: one, url: "${BASE}/echo"}
              - {id: two, url: "${BASE}/status/500"}
              - {id: three, url: "${BASE}/echo"}
              - {id: four, url: "${BASE}/echo"}
            """)
        #expect(summary.stop == .failFast)
        #expect(summary.results.map(\.outcome) == [.succeeded, .failed, .skipped, .skipped])
        #expect(summary.results[2].reason == "not started: fail_fast stopped the run")
        #expect(server.state.requests.count == 2)
        try await server.shutdown()
    }

    @Test func maxTimeCancelsRunningJobsAndSkipsTheRest() async throws {
        let server = try await TestServer.start()
        let started = ContinuousClock.now
        let (summary, _) = try await run(server, """
            settings: {concurrency: 2}
            jobs:
              - {id: slow-1, url: "${BASE}/delay/60000", save: one.txt}
              - {id: slow-2, url: "${BASE}/delay/60000", save: two.txt}
              - {id: slow-3, url: "${BASE}/delay/60000"}
            """, options: Runner.Options(maxTime: .milliseconds(300)))
        // Without --max-time the run would take 120 s (three 60 s jobs, two at a time); a loaded
        // machine (the whole suite at once on two cores) has held the deadline back ten seconds.
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(summary.stop == .maxTime)
        #expect(summary.results.map(\.outcome) == [.failed, .failed, .skipped])
        #expect(summary.results[0].error?.code == .cancelled)
        #expect(summary.exitStatus == .jobsFailed)
        try await server.shutdown()
    }

    @Test(arguments: [nil, Duration.seconds(60)])
    func cancellingTheRunInterruptsIt(maxTime: Duration?) async throws {
        let server = try await TestServer.start()
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            settings: {concurrency: 2, output_dir: out}
            jobs:
              - {id: a, url: "${BASE}/bytes/1000000?stall_after=10000&stall_ms=10000", save: a.bin}
              - {id: b, url: "${BASE}/delay/10000", save: b.txt}
              - {id: c, url: "${BASE}/echo", save: c.json}
            """])
        let config = fixture.load("jobs.yaml", environment: ["BASE": server.baseURL], mode: .run)
        // With --max-time set, the interrupted run must still say interrupted, not max-time.
        let runner = Runner(config: config, plan: try RunPlan(config: config), options: Runner.Options(maxTime: maxTime))
        let task = Task { await runner.run() }
        while server.state.requests.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        let summary = await task.value
        #expect(summary.stop == .interrupted)
        #expect(summary.results.map(\.outcome) == [.failed, .failed, .skipped])
        #expect(files(under: fixture.path("out")).isEmpty)
        try await server.shutdown()
    }
}
