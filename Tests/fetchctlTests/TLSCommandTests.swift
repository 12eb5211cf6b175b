import Foundation
import FetchKitTesting
import Testing

/// `fetchctl run` over HTTPS against the TLS test server, and what `--dry-run` shows of the TLS
/// settings (file names and pins, never a passphrase).
@Suite struct TLSCommandTests {
    static let certificates = Result { try TestCertificates.make() }

    func events(_ stderr: String) -> [[String: Any]] {
        stderr.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func aPinnedBatchOverHTTP2AndAWrongPinThatSendsNothing() async throws {
        let certificates = try Self.certificates.get()
        let server = try await TestServer.start(tls: .init(certificates))
        let other = "sha256/" + Data(repeating: 7, count: 32).base64EncodedString()
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {output_dir: out, tls: {ca_file: "\(certificates.caFile)", pins: ["\(certificates.serverPinCurlStyle)"]}}
            jobs:
              - {id: page, url: "${BASE}/bytes/2000?seed={{matrix.n}}", matrix: {n: [1, 2, 3, 4, 5, 6]}, save: "p{{matrix.n}}.bin"}
              - {id: impostor, url: "${BASE}/echo?who=impostor", tls: {pins: ["\(other)"]}, save: impostor.json}
            """])
        let result = try await FetchctlProcess.run(["run", "jobs.yaml", "--log-format", "json"], in: dir, environment: ["BASE": server.baseURL])
        #expect(result.status == 1, "\(result.stderr)")
        let log = events(result.stderr)
        let finished = log.filter { $0["event"] as? String == "request.finished" }
        #expect(finished.count == 6, "\(result.stderr.suffix(1500))")
        #expect(finished.allSatisfy { $0["http_version"] as? String == "2" })
        let failed = log.first { $0["event"] as? String == "job.finished" && $0["job"] as? String == "impostor" }
        #expect(failed?["outcome"] as? String == "failed")
        #expect(failed?["error"] as? String == "tls_pin_mismatch")
        #expect(server.state.requests(pathPrefix: "/echo").isEmpty, "the impostor job sent nothing")
        #expect(server.state.requests(pathPrefix: "/bytes").count == 6)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/impostor.json").path))
        try await server.shutdown()
    }

    @Test func dryRunShowsTheTLSSettingsButNoPassphrase() async throws {
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings: {http_version: 1.1, tls: {ca_file: corp-ca.pem}}
            jobs:
              - id: report
                url: "https://reports.corp.example/daily"
                tls: {pins: ["sha256/47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="], client_cert: me.pem, client_key: me.key,
                      client_key_passphrase: "${KEY_PASSPHRASE}"}
            """])
        let result = try await FetchctlProcess.run(["run", "jobs.yaml", "--dry-run"], in: dir, environment: ["KEY_PASSPHRASE": "open-sesame-42"])
        #expect(result.status == 0, "\(result.stderr)")
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        #expect(result.stdout == """
            # 1 job, in order; nothing is sent

            # report
            # cache: not stored: fetched
            # tls: trusts \(path("corp-ca.pem")) besides the system's CAs; the server's key must match one of 1 pin; client certificate \(path("me.pem")) (its key encrypted)
            curl 'https://reports.corp.example/daily' \\
              --http1.1 \\
              --cacert '\(path("corp-ca.pem"))' \\
              --pinnedpubkey 'sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=' \\
              --cert '\(path("me.pem"))' \\
              --key '\(path("me.key"))' \\
              --pass '<redacted>' \\
              -H 'User-Agent: fetchctl/0.1.0'

            """)
        #expect(!result.stdout.contains("open-sesame-42") && !result.stderr.contains("open-sesame-42"))
    }
}
