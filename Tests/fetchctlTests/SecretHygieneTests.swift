import Foundation
import FetchKitTesting
import Testing

/// Secrets seeded into every place one can live — bearer, basic and header auth, an OAuth2 client
/// secret and the tokens it gets, a `${…TOKEN}` variable in a header, a query and a body, proxy
/// credentials, a client key's passphrase — are sent where they belong (the server and the proxy saw
/// them) and appear in no byte fetchctl writes: stdout and stderr of `validate`, `run` (text and
/// JSON logs, `--dry-run`), `render`, `status` and `cache list`, the log file, the JSON and JUnit
/// reports, and every file of the state directory (state and cache databases, their WALs, stored
/// bodies and headers).
@Suite struct SecretHygieneTests {
    static let secrets = [
        "BEARER_TOKEN": "zq1-bearer-0a9f3",
        "BASIC_PASSWORD": "zq2-basic-7c1e2",
        "HEADER_KEY": "zq3-header-5d8b4",
        "CLIENT_SECRET": "zq4-client-9e2a7",
        "API_TOKEN": "zq6-api-3f6c1",
        "PROXY_PASSWORD": "zq7-proxy-8b4d0",
        "KEY_PASSPHRASE": "zq8-passphrase-2c7e9",
    ]
    /// The OAuth2 access tokens the test server issues (`zq5-access-1`, …).
    static let tokenPrefix = "zq5-access-"

    @Test func noSecretReachesAnyByteFetchctlWrites() async throws {
        let certificates = try TLSCommandTests.certificates.get()
        let server = try await TestServer.start()
        let tls = try await TestServer.start(tls: .init(certificates, requireClientCertificate: true))
        let proxy = try await TestProxy.start(.requiresCredentials(username: "px", password: Self.secrets["PROXY_PASSWORD"]!))
        let encryptedKey = try await certificates.encryptedClientKey(passphrase: Self.secrets["KEY_PASSPHRASE"]!)

        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            service: api
            base_url: ${BASE}
            routes:
              me:
                path: /bearer
                query: {token: "${BEARER_TOKEN}"}
                auth: {bearer: "${BEARER_TOKEN}"}
            settings: {output_dir: out, retry: {limit: 1, backoff: {scale: 50ms}}}
            jobs:
              - {id: bearer, route: api.me, save: bearer.json}
              - {id: basic, url: "${BASE}/status/200", auth: {basic: {username: someone, password: "${BASIC_PASSWORD}"}}}
              - {id: header, url: "${BASE}/status/200", auth: {header: {name: X-Api-Key, value: "${HEADER_KEY}"}}}
              - id: oauth
                url: "${BASE}/status/200?who=oauth"
                auth: {oauth2: {token_url: "${BASE}/oauth/token?prefix=\(Self.tokenPrefix)", client_id: app, client_secret: "${CLIENT_SECRET}",
                                grant: client_credentials}}
              - id: variable
                url: "${BASE}/status/200?key=${API_TOKEN}"
                method: POST
                headers: {X-Token: "${API_TOKEN}"}
                encoding: json
                parameters: {token: "${API_TOKEN}"}
              - {id: failing, url: "${BASE}/status/503?key=${API_TOKEN}", headers: {X-Token: "${API_TOKEN}"}}
              - id: client-cert
                url: "${TLS_BASE}/status/200"
                tls: {ca_file: "\(certificates.caFile)", client_cert: "\(certificates.clientCertFile)", client_key: "\(encryptedKey)",
                      client_key_passphrase: "${KEY_PASSPHRASE}"}
            """])
        var environment = Self.secrets
        environment["BASE"] = server.baseURL
        environment["TLS_BASE"] = tls.baseURL
        // Both through the proxy (a CONNECT tunnel each), with its credentials in the URLs.
        let proxyURL = "http://px:\(Self.secrets["PROXY_PASSWORD"]!)@127.0.0.1:\(proxy.port)"
        environment["http_proxy"] = proxyURL
        environment["HTTPS_PROXY"] = proxyURL

        var written: [String] = []
        func run(_ arguments: [String]) async throws -> FetchctlProcess.Result {
            let result = try await FetchctlProcess.run(arguments, in: dir, environment: environment)
            written += [result.stdout, result.stderr]
            return result
        }
        _ = try await run(["validate", "jobs.yaml", "--format", "json"])
        _ = try await run(["run", "jobs.yaml", "--dry-run"])
        _ = try await run(["render", "jobs.yaml", "api.me", "--format", "http"])
        let json = try await run(["run", "jobs.yaml", "--log-format", "json", "--log-file", "log.jsonl", "--report", "json", "report.json"])
        #expect(json.status == 1, "only the 503 fails: \(json.stderr)")
        let text = try await run(["run", "jobs.yaml", "--log-format", "text", "--report", "junit", "report.xml"])
        #expect(text.status == 1)
        _ = try await run(["status"])
        _ = try await run(["status", "--jobs"])
        _ = try await run(["status", "--format", "json"])
        _ = try await run(["cache", "list"])

        // They were used: the server and the proxy saw every one of them.
        let seen = server.state.requests.map { request in request.uri + request.headers.map { "\($0.name): \($0.value)" }.joined() }
            .joined() + tls.state.requests.map { $0.uri }.joined()
        #expect(seen.contains(Self.secrets["BEARER_TOKEN"]!) && seen.contains(Self.secrets["API_TOKEN"]!)
                && seen.contains(Self.secrets["HEADER_KEY"]!) && seen.contains("Bearer " + Self.tokenPrefix + "2"))
        #expect(server.state.requests.contains { $0.path == "/oauth/token" && $0.bodyBytes > 0 }, "the client secret was sent")
        #expect(seen.contains("Basic " + Data("someone:\(Self.secrets["BASIC_PASSWORD"]!)".utf8).base64EncodedString()))
        #expect(tls.state.requests.contains { $0.clientCertificate == "CN=fetchctl test client" }, "the encrypted key was used")
        #expect(proxy.requests.contains { $0.status == 200 }, "the proxy's credentials were used")

        // Every file fetchctl wrote, but the saved outputs (the server's own bytes).
        let root = dir.path
        for path in FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? [] where !path.hasPrefix("out/") {
            let full = root + "/" + path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue, path != "jobs.yaml",
                  let data = FileManager.default.contents(atPath: full) else { continue }
            written.append(String(decoding: data, as: UTF8.self))
        }
        #expect(written.count > 20, "stdout, stderr and the state files were read (\(written.count))")
        // The access tokens the two runs got (the prefix alone is in the token URL, not a secret).
        let needles = Array(Self.secrets.values) + [Self.tokenPrefix + "1", Self.tokenPrefix + "2",
                                                    Data("someone:\(Self.secrets["BASIC_PASSWORD"]!)".utf8).base64EncodedString()]
        for needle in needles {
            let hits = written.filter { $0.contains(needle) }
            #expect(hits.isEmpty, "\(needle) written in: \(hits.map { String($0.prefix(300)) })")
        }
        try await proxy.shutdown()
        try await tls.shutdown()
        try await server.shutdown()
    }
}
