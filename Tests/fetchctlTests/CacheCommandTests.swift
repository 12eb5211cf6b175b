import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import FetchKitTesting
import Testing

/// The response cache on the built binary: `kill -9` while it stores, a file-size limit that
/// stops a store midway, `--offline` with the server gone, and `fetchctl cache` beside a run.
@Suite struct CacheCommandTests {
    func text(_ directory: URL, _ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    static func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    /// What the server sends for `path`, fetched without fetchctl.
    static func serverBody(_ server: TestServer, _ path: String, session: URLSession) async throws -> Data {
        let (data, response) = try await session.data(for: URLRequest(url: URL(string: server.baseURL + path)!))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        return data
    }

    @Test func killedWhileStoringTheRerunsServeOnlyWholeBodies() async throws {
        let server = try await TestServer.start()
        // Half fresh for ten minutes (served from the cache), half revalidated on every use (304s).
        let paths = (0..<200).map { n in "/cache/k\(n)?size=\(2000 + 37 * n)&fixed=1&" + (n % 2 == 0 ? "max_age=600" : "cache_control=no-cache") }
        var expected: [String] = []
        let session = URLSession(configuration: .ephemeral)
        for path in paths { expected.append(Self.sha256(try await Self.serverBody(server, path, session: session))) }
        session.finishTasksAndInvalidate()
        let dir = try FetchctlProcess.directory(with: [:])
        // The URLs differ per job in size and in how they are cached.
        var jobs = "version: 1\nsettings: {concurrency: 16, per_host: 16, output_dir: out}\njobs:\n"
        for (n, path) in paths.enumerated() { jobs += "  - {id: k\(n), url: \"${BASE}\(path)\", save: \"k/\(n).json\"}\n" }
        try jobs.write(to: dir.appendingPathComponent("jobs.yaml"), atomically: true, encoding: .utf8)
        let environment = ["BASE": server.baseURL]

        var delays: [Int] = []
        for round in 0..<8 {
            let process = try FetchctlProcess.start(["run", "jobs.yaml", "--progress", "never"], in: dir, environment: environment)
            let delay = Int.random(in: 10...(round < 4 ? 120 : 400))
            delays.append(delay)
            try await Task.sleep(for: .milliseconds(delay))
            kill(process.processIdentifier, SIGKILL)
            await FetchctlProcess.waitForExit(process)
        }
        func checkOutputs(_ label: String) {
            for n in 0..<200 {
                let data = (try? Data(contentsOf: dir.appendingPathComponent("out/k/\(n).json"))) ?? Data()
                #expect(Self.sha256(data) == expected[n], "\(label): job k\(n) after kills at \(delays) ms")
            }
        }
        let finish = try await FetchctlProcess.run(["run", "jobs.yaml", "--progress", "never"], in: dir, environment: environment)
        #expect(finish.status == 0, "\(finish.stderr)")
        checkOutputs("completing run")

        // Every body now comes from the store (a hit or a 304): each must be what the server sent.
        try FileManager.default.removeItem(at: dir.appendingPathComponent("out"))
        let served = try await FetchctlProcess.run(["run", "jobs.yaml", "--progress", "never", "--log-format", "json"], in: dir,
                                                   environment: environment)
        #expect(served.status == 0, "\(served.stderr)")
        let finished = served.stderr.split(separator: "\n").filter { $0.contains(#""event":"request.finished""#) }
        #expect(finished.filter { $0.contains(#""cache":"hit""#) }.count == 100)
        #expect(finished.filter { $0.contains(#""cache":"revalidated""#) }.count == 100)
        checkOutputs("run from the cache")
        try await server.shutdown()
    }

    @Test func aStoreCutShortByAFileSizeLimitWarnsAndTheJobSucceeds() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {output_dir: out}
            jobs:
              - {id: big, url: "${BASE}/cache/big?max_age=600&size=3000000"}
              - {id: small, url: "${BASE}/cache/small?max_age=600", save: small.json}
            """])
        // As a full disk would: writes past 1 MiB fail (EFBIG; SIGXFSZ ignored so write returns the error).
        // stderr to a file, read once the process is gone: reading a pipe to its end here would
        // block a thread of the (two-thread) cooperative pool, and every other test with it.
        let logPath = dir.appendingPathComponent("stderr.txt").path
        let shell = try ProcessLauncher.spawn(
            "/bin/bash", ["-c", "trap '' XFSZ; ulimit -f 1024; exec \"$0\" run jobs.yaml --log-format json --progress never",
                          FetchctlProcess.binary.path],
            in: dir.path, environment: ["BASE": server.baseURL, "PATH": "/usr/bin:/bin"], stderr: logPath)
        await FetchctlProcess.waitForExit(shell)
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        #expect(shell.terminationStatus == 0, "\(log)")
        #expect(log.contains(#""event":"cache.warning""#), "\(log)")
        #expect(log.contains(#""job":"big","outcome":"succeeded""#))

        let rerun = try await FetchctlProcess.run(["run", "jobs.yaml", "--log-format", "json"], in: dir, environment: ["BASE": server.baseURL])
        #expect(rerun.status == 0)
        #expect(rerun.stderr.contains(#""job":"big","method":"GET""#) && rerun.stderr.contains(#""cache":"miss""#), "nothing torn was stored")
        #expect(rerun.stderr.contains(#""job":"small","outcome":"cached""#))
        try await server.shutdown()
    }

    @Test func offlineWithTheServerGone() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {output_dir: out}
            jobs:
              - {id: stored, url: "${BASE}/cache/plane?cache_control=no-cache", save: plane.json}
            """])
        let environment = ["BASE": server.baseURL]
        #expect(try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: environment).status == 0)
        let saved = text(dir, "out/plane.json")
        try await server.shutdown()
        try FileManager.default.removeItem(at: dir.appendingPathComponent("out"))
        let offline = try await FetchctlProcess.run(["run", "jobs.yaml", "--offline", "--progress", "never"], in: dir, environment: environment)
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(offline.stderr.contains("job.finished job=stored outcome=cached"))
        #expect(text(dir, "out/plane.json") == saved)
        let online = try await FetchctlProcess.run(["run", "jobs.yaml", "--progress", "never"], in: dir, environment: environment)
        #expect(online.status == 1, "without --offline the stale entry must be revalidated, and the server is gone")
    }

    @Test func cacheCommandsBesideARun() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {output_dir: out}
            jobs:
              - {id: a, url: "${BASE}/cache/a?max_age=600&size=1000", save: a.json}
              - {id: b, url: "${BASE}/cache/b?max_age=600&size=2000", save: b.json, needs: [a]}
            """, "slow.yaml": """
            version: 1
            settings: {output_dir: out2, state_dir: .fetchctl}
            jobs:
              - {id: slow, url: "${BASE}/delay/60000", save: slow.txt, cache: {behavior: do_not_cache}}
            """])
        let environment = ["BASE": server.baseURL]
        #expect(try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: environment).status == 0)

        // The slow run holds the lock from before its request reaches the server until it is ended
        // below: the commands in between meet a held lock however slowly this machine runs them.
        let running = try FetchctlProcess.start(["run", "slow.yaml", "--progress", "never"], in: dir, environment: environment)
        let deadline = ContinuousClock.now + .seconds(30)
        while server.state.requests(pathPrefix: "/delay").isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.state.requests(pathPrefix: "/delay").count == 1, "the slow run never sent its request")
        let stats = try await FetchctlProcess.run(["cache", "stats", "jobs.yaml"], in: dir)
        #expect(stats.status == 0, "reading works while a run holds the lock: \(stats.stderr)")
        #expect(stats.stdout.contains("entries:  2 (2.9 KiB)"), "\(stats.stdout)")
        let list = try await FetchctlProcess.run(["cache", "list", "jobs.yaml", "--url-prefix", server.baseURL + "/cache/b"], in: dir)
        #expect(list.stdout.split(separator: "\n").count == 1)
        #expect(list.stdout.contains("/cache/b?max_age=600&size=2000"))
        let clear = try await FetchctlProcess.run(["cache", "clear", "jobs.yaml"], in: dir)
        #expect(clear.status == 75, "\(clear.stderr)")
        #expect(clear.stderr.contains("another fetchctl run (pid \(running.processIdentifier))"))
        let prune = try await FetchctlProcess.run(["cache", "prune", "jobs.yaml", "--max-size", "1500"], in: dir)
        #expect(prune.status == 75)
        running.terminate()
        await FetchctlProcess.waitForExit(running)
        #expect(running.terminationStatus == 143, "SIGTERM ends a run with 143")

        let pruned = try await FetchctlProcess.run(["cache", "prune", "jobs.yaml", "--max-size", "2500"], in: dir)
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(pruned.stderr.contains("removed 1 entry (1000 B)"))
        let json = try await FetchctlProcess.run(["cache", "stats", "jobs.yaml", "--format", "json"], in: dir)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["entries"] as? Int == 1)
        #expect(object?["bytes"] as? Int == 2000)
        let cleared = try await FetchctlProcess.run(["cache", "clear", "jobs.yaml"], in: dir)
        #expect(cleared.status == 0)
        #expect(cleared.stderr.contains("removed 1 entry (2.0 KiB)"))
        let badSize = try await FetchctlProcess.run(["cache", "prune", "jobs.yaml", "--max-size", "lots"], in: dir)
        #expect(badSize.status == 64)
        try await server.shutdown()
    }
}
