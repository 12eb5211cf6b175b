import Foundation
import FetchKitTesting
import Testing

/// `fetchctl run` and `fetchctl demo` on the built binary against the local server: results on
/// disk, a parseable log, the summary, exit codes, dry runs and signals.
@Suite struct RunCommandTests {
    func jobsDirectory(_ jobs: String) throws -> URL {
        try FetchctlProcess.directory(with: ["jobs.yaml": "version: 1\n" + jobs])
    }

    func text(_ directory: URL, _ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    /// FETCHCTL_HTTP_CLIENT picks the HTTP client. Told apart by a kept-alive connection the
    /// server drops when the next request comes: FetchKit's client sends that request again on a
    /// new connection; AsyncHTTPClient reports it (and with no retries, the job fails).
    @Test func theHTTPClientIsChosenByTheEnvironment() async throws {
        let server = try await TestServer.start()
        let dir = try jobsDirectory("""
            settings: {concurrency: 1, per_host: 1, output_dir: out, retry: {limit: 0}, cache: {policy: reload, behavior: do_not_cache}}
            jobs:
              - {id: first, url: "${BASE}/bytes/100?drop_next=1", save: first.bin}
              - {id: second, url: "${BASE}/bytes/200", save: second.bin, needs: [first]}
            """)
        let own = try await FetchctlProcess.run(["run", "jobs.yaml", "--progress", "never"], in: dir, environment: ["BASE": server.baseURL])
        #expect(own.status == 0, "\(own.stderr)")
        try FileManager.default.removeItem(at: dir.appendingPathComponent(".fetchctl"))
        try FileManager.default.removeItem(at: dir.appendingPathComponent("out"))
        let ahc = try await FetchctlProcess.run(["run", "jobs.yaml", "--progress", "never"], in: dir,
                                                environment: ["BASE": server.baseURL, "FETCHCTL_HTTP_CLIENT": "asynchttpclient"])
        #expect(ahc.status == 1, "\(ahc.stderr)")
        #expect(ahc.stderr.contains("connection"), "\(ahc.stderr)")
        let bad = try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: ["BASE": server.baseURL, "FETCHCTL_HTTP_CLIENT": "curl"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("error: FETCHCTL_HTTP_CLIENT is 'curl'; it can be fetchkit or asynchttpclient"), "\(bad.stderr)")
        try await server.shutdown()
    }

    @Test func twoHundredSavesAndAParseableLog() async throws {
        let server = try await TestServer.start()
        let values = (0..<200).map(String.init).joined(separator: ", ")
        let dir = try jobsDirectory("""
            settings: {concurrency: 16, output_dir: out}
            jobs:
              - id: item
                url: "${BASE}/bytes/2048?seed={{matrix.n}}"
                matrix: {n: [\(values)]}
                save: "items/{{matrix.n}}.bin"
            """)
        let result = try await FetchctlProcess.run(["run", "jobs.yaml", "--log-format", "json", "--log-file", "run.log"], in: dir,
                                             environment: ["BASE": server.baseURL])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        for n in 0..<200 {
            let data = try Data(contentsOf: dir.appendingPathComponent("out/items/\(n).bin"))
            #expect(Array(data) == GeneratedBytes.bytes(0..<2048, seed: n))
        }
        let lines = text(dir, "run.log").split(separator: "\n")
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == lines.count)
        #expect(objects.filter { $0["event"] as? String == "job.finished" }.count == 200)
        let finished = try #require(objects.last)
        #expect(finished["event"] as? String == "run.finished")
        #expect(finished["succeeded"] as? Int == 200)
        #expect(result.stderr.contains("200 jobs in "))
        #expect(result.stderr.contains("200 succeeded, 0 failed, 0 skipped"))
        try await server.shutdown()
    }

    @Test func failingJobsEndWithASummaryAndExit1() async throws {
        let server = try await TestServer.start()
        let dir = try jobsDirectory("""
            settings: {retry: {limit: 1, backoff: {scale: 10ms}}}
            jobs:
              - {id: ok, url: "${BASE}/echo", save: ok.json}
              - {id: gone, url: "${BASE}/status/404", save: gone.txt}
              - {id: down, url: "${BASE}/status/503"}
              - {id: report, url: "${BASE}/echo", needs: [gone]}
            """)
        let result = try await FetchctlProcess.run(["run", "jobs.yaml", "--progress", "never"], in: dir, environment: ["BASE": server.baseURL])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("4 jobs in "))
        #expect(result.stderr.contains(": 1 succeeded, 2 failed, 1 skipped\n"))
        // Failures are listed as they finished: which of the two ends first is the machine's timing.
        let failed = result.stderr.components(separatedBy: "Failed:\n").last?.components(separatedBy: "Skipped:").first ?? ""
        #expect(Set(failed.split(separator: "\n").map(String.init)) == [
            "  gone  status: HTTP 404 is not in 2xx (\(server.baseURL)/status/404)",
            "  down  status: HTTP 503 is not in 2xx (\(server.baseURL)/status/503) after 2 attempts",
        ], "\(result.stderr)")
        #expect(result.stderr.contains("Skipped:\n  report  needs gone, which failed\n"))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/gone.txt").path))
        try await server.shutdown()
    }

    @Test func jsonLogOnStderrIsOnlyJSON() async throws {
        let server = try await TestServer.start()
        let dir = try jobsDirectory("jobs:\n  - {id: one, url: \"${BASE}/echo\"}\n")
        let result = try await FetchctlProcess.run(["run", "jobs.yaml", "--log-format", "json"], in: dir, environment: ["BASE": server.baseURL])
        #expect(result.status == 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count >= 6)
        #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil })
        try await server.shutdown()
    }

    @Test func exitCodes() async throws {
        let dir = try jobsDirectory("""
            jobs:
              - {id: one, url: "${BASE:?set BASE to the server}/echo"}
            """)
        let missingEnv = try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir)
        #expect(missingEnv.status == 2)
        #expect(missingEnv.stderr.contains("jobs.yaml:3:"))
        #expect(missingEnv.stderr.contains("set BASE to the server"))
        let unknownJob = try await FetchctlProcess.run(["run", "jobs.yaml", "--job", "oen"], in: dir, environment: ["BASE": "http://127.0.0.1:9"])
        #expect(unknownJob.status == 64)
        #expect(unknownJob.stderr == "error: no job 'oen' in the jobs file (did you mean 'one'?)\n")
        let badDuration = try await FetchctlProcess.run(["run", "jobs.yaml", "--max-time", "soon"], in: dir)
        #expect(badDuration.status == 64)
        #expect(badDuration.stderr.contains("--max-time takes a duration"))
        let noFile = try await FetchctlProcess.run(["run", "nothing.yaml"], in: dir)
        #expect(noFile.status == 2)
    }

    @Test func dryRunPrintsThePlanAndSendsNothing() async throws {
        let server = try await TestServer.start()
        let dir = try jobsDirectory("""
            settings: {headers: {Authorization: "Bearer ${API_TOKEN}"}}
            jobs:
              - {id: first, url: "${BASE}/echo?key=${API_TOKEN}", save: first.json}
              - {id: second, url: "${BASE}/echo", needs: [first]}
            """)
        let result = try await FetchctlProcess.run(["run", "jobs.yaml", "--dry-run"], in: dir,
                                             environment: ["BASE": server.baseURL, "API_TOKEN": "s3cr3t-value"])
        #expect(result.status == 0)
        let out = dir.appendingPathComponent("out/first.json").path
        #expect(result.stdout == """
            # 2 jobs, in order; nothing is sent

            # first → save \(out)
            # cache: not stored: fetched
            curl '\(server.baseURL)/echo?key=<redacted>' \\
              -H 'User-Agent: fetchctl/0.1.0' \\
              -H 'Authorization: <redacted>'

            # second (needs first)
            # cache: not stored: fetched
            curl '\(server.baseURL)/echo' \\
              -H 'User-Agent: fetchctl/0.1.0' \\
              -H 'Authorization: <redacted>'

            """)
        #expect(server.state.requests.isEmpty)
        try await server.shutdown()
    }

    /// A dry run on a machine without the secrets: the plan, a warning, and `<unset: NAME>` where
    /// the value goes (the set part of a value stays redacted); a real run refuses (exit 2).
    @Test func dryRunWithAnUnsetVariableShowsThePlan() async throws {
        let dir = try jobsDirectory("""
            settings: {headers: {X-Api-Key: "${API_KEY}"}}
            jobs:
              - {id: one, url: "https://api.example.org/items", auth: {bearer: "${PREFIX_TOKEN}-${API_TOKEN}"}}
            """)
        let environment = ["PREFIX_TOKEN": "visible-part-secret"]
        let plan = try await FetchctlProcess.run(["run", "jobs.yaml", "--dry-run"], in: dir, environment: environment)
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stderr.contains("warning: environment variable 'API_KEY' is not set"))
        #expect(plan.stderr.contains("warning: environment variable 'API_TOKEN' is not set"))
        #expect(plan.stdout.contains("-H 'X-Api-Key: <unset: API_KEY>'"), "\(plan.stdout)")
        #expect(plan.stdout.contains("-H 'Authorization: <redacted> <unset: API_TOKEN>'"), "\(plan.stdout)")
        #expect(!plan.stdout.contains("visible-part-secret"))
        let run = try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: environment)
        #expect(run.status == 2)
        #expect(run.stderr.contains("error: environment variable 'API_KEY' is not set"))
    }

    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func aSignalStopsTheRunSavesStateAndExits(signal: Int32, status: Int32) async throws {
        let server = try await TestServer.start()
        let dir = try jobsDirectory("""
            settings: {concurrency: 2, output_dir: out}
            jobs:
              - {id: stalled, url: "${BASE}/bytes/1000000?stall_after=65536&stall_ms=20000", save: stalled.bin}
              - {id: slow, url: "${BASE}/delay/20000", save: slow.txt}
              - {id: later, url: "${BASE}/echo", save: later.json}
            """)
        let process = try FetchctlProcess.start(["run", "jobs.yaml", "--log-format", "json", "--log-file", "run.log"], in: dir,
                                                environment: ["BASE": server.baseURL])
        let deadline = ContinuousClock.now + .seconds(10)
        while server.state.requests.count < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.state.requests.count == 2)
        let sent = ContinuousClock.now
        kill(process.processIdentifier, signal)
        await FetchctlProcess.waitForExit(process)
        #expect(ContinuousClock.now - sent < .seconds(10))  // the stalled transfers would take 20 s
        #expect(process.terminationStatus == status)
        let log = text(dir, "run.log")
        #expect(log.contains(#""event":"run.finished""#))
        #expect(log.contains(#""stopped":"interrupted""#))
        #expect(text(dir, "stderr.txt").contains("Interrupted: running jobs were cancelled."))
        let left = (try? FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("out").path)) ?? []
        #expect(left.isEmpty, "left behind: \(left)")
        try await server.shutdown()
    }

    @Test func demoRunsOfflineAndSucceeds() async throws {
        let result = try await FetchctlProcess.run(["demo", "--progress", "never"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("19 jobs in "))
        #expect(result.stderr.contains(": 18 succeeded, 0 failed, 0 skipped, 1 cached"))
        #expect(result.stderr.contains("job.finished job=forecast-again outcome=cached"))
        #expect(result.stderr.contains("job.finished job=catalog-again outcome=succeeded status=200"))
        #expect(result.stderr.contains("cache=revalidated"))
        #expect(result.stderr.contains("Cache: 1 hit, 1 revalidated (304)"))
        #expect(result.stderr.contains("request.retrying job=flaky"))
        #expect(result.stderr.contains("reason=\"status 429\" delay_ms=1000 retry_after=1"))
        #expect(result.stderr.contains("download.resumed job=archive offset="))
        let archive = FetchctlProcess.root.appendingPathComponent("examples/quickstart/out/archive.bin")
        #expect((try FileManager.default.attributesOfItem(atPath: archive.path)[.size] as? Int) == 33_554_432)
    }
}
