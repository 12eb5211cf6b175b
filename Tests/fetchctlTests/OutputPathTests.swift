import Foundation
import FetchKitTesting
import Testing

/// Output paths stay inside `output_dir` after interpolation and after symbolic links: a `..` that
/// a value brings in is a config error before anything runs, and a directory that is a link to
/// elsewhere fails the job with `path_escape` before its request is sent.
@Suite struct OutputPathTests {
    @Test func aParamValueWithDotDotIsRefusedBeforeTheRun() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {output_dir: out}
            jobs:
              - {id: page, url: "${BASE}/echo?name={{matrix.name}}", matrix: {name: [ok, ../../x]}, save: "pages/{{matrix.name}}.json"}
            """])
        let result = try await FetchctlProcess.run(["run", "jobs.yaml"], in: dir, environment: ["BASE": server.baseURL])
        #expect(result.status == 2)
        #expect(result.stderr.contains("error: output path 'pages/../../x.json' of job 'page[name=../../x]' is outside output_dir"), "\(result.stderr)")
        #expect(server.state.requests.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir.deletingLastPathComponent().appendingPathComponent("x.json").path))
        try await server.shutdown()
    }

    @Test func aSymlinkedOutputDirectoryIsRefusedAtRunTime() async throws {
        let server = try await TestServer.start()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {output_dir: out}
            jobs:
              - {id: inside, url: "${BASE}/echo?n=1", save: "kept/one.json"}
              - {id: outside, url: "${BASE}/echo?n=2", save: "reports/two.json"}
              - {id: deeper, url: "${BASE}/echo?n=3", save: "reports/daily/three.json"}
            """])
        let elsewhere = dir.appendingPathComponent("elsewhere").path
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir.appendingPathComponent("out").path, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("out/reports").path, withDestinationPath: elsewhere)
        let result = try await FetchctlProcess.run(["run", "jobs.yaml", "--log-format", "json"], in: dir, environment: ["BASE": server.baseURL])
        #expect(result.status == 1)
        let failed = result.stderr.split(separator: "\n").filter { $0.contains(#""event":"job.finished""#) && $0.contains(#""outcome":"failed""#) }
        #expect(failed.count == 2)
        #expect(failed.allSatisfy { $0.contains(#""error":"path_escape""#) && $0.contains("symbolic link") }, "\(failed)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty, "nothing written through the link")
        #expect(server.state.requests.map(\.uri) == ["/echo?n=1"], "the refused jobs sent nothing")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/kept/one.json").path))
        try await server.shutdown()
    }
}
