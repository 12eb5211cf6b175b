import Foundation
import Testing
import FetchKitTesting

/// The commands end to end: the real binary, real files, exit codes and exact output.
@Suite struct CommandTests {
    @Test func validateAcceptsEveryExample() async throws {
        for example in ["examples/github/jobs.yaml", "examples/github/github.routes.yaml", "examples/downloads/jobs.yaml"] {
            let result = try await FetchctlProcess.run(["validate", example])
            #expect(result.status == 0, "\(example): \(result.stdout)")
            #expect(!result.stdout.contains("error:"))
        }
    }

    /// "Done means": a config with ten different mistakes gets ten located diagnostics in one run.
    @Test func tenMistakesTenDiagnostics() async throws {
        let dir = try FetchctlProcess.directory(with: ["jobs.yaml": """
            version: 1
            settings:
              concurency: 4
              per_host: 0
            service: api
            base_url: https://api.example.org
            routes:
              get_item:
                method: GRAB
                path: /items/{{id}}
                timeout: {read: 5 minutes}
                retry: {statuses: ["5xy"]}
            jobs:
              - id: one
                route: api.get_itme
              - id: two
                route: api.get_item
                params: {id: 1, colour: red}
                save: ../../etc/passwd
                checksum: sha1:abc
            """])
        let result = try await FetchctlProcess.run(["validate", "jobs.yaml"], in: dir)
        #expect(result.status == 2)
        #expect(result.stdout == """
            jobs.yaml:3:3: error: unknown key 'concurency' in settings (did you mean 'concurrency'?)
              concurency: 4
              ^
            jobs.yaml:4:13: error: 'per_host' must be at least 1, found 0
              per_host: 0
                        ^
            jobs.yaml:9:13: error: invalid HTTP method 'GRAB' (expected one of: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE, QUERY)
                method: GRAB
                        ^
            jobs.yaml:11:21: error: invalid duration '5 minutes' (use a number with ms, s, m, h or d, like 250ms, 30s or 5m; a bare number is seconds)
                timeout: {read: 5 minutes}
                                ^
            jobs.yaml:12:24: error: invalid status '5xy' (use a code from 100 to 599, a class like "2xx", or a range like "200-299")
                retry: {statuses: ["5xy"]}
                                   ^
            jobs.yaml:15:12: error: unknown route 'api.get_itme' (did you mean 'api.get_item'?)
                route: api.get_itme
                       ^
            jobs.yaml:18:21: error: route 'api.get_item' has no param 'colour' (its params: id)
                params: {id: 1, colour: red}
                                ^
            jobs.yaml:19:11: error: output path '../../etc/passwd' of job 'two' is outside output_dir (use a relative path without '..' that stays inside out)
                save: ../../etc/passwd
                      ^
            jobs.yaml:20:5: error: 'checksum' needs 'download' (only downloads are verified)
                checksum: sha1:abc
                ^
            jobs.yaml:20:15: error: invalid checksum 'sha1:abc' (write sha256:<64 hex digits> or sha512:<128 hex digits>)
                checksum: sha1:abc
                          ^

            """)
        #expect(result.stderr == "10 errors, 0 warnings in 1 file\n")
    }

    @Test func validateJSONAndGitHubFormats() async throws {
        let dir = try FetchctlProcess.directory(with: ["r.yaml": "version: 1\nservice: s\nbase_url: https://a.org\nroutes:\n  a: {path: /a, encodng: json}\n"])
        let json = try await FetchctlProcess.run(["validate", "--format", "json", "r.yaml"], in: dir)
        #expect(json.status == 2)
        let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(items.count == 1)
        #expect(items[0]["code"] as? String == "unknown-key")
        #expect(items[0]["line"] as? Int == 5)
        #expect(items[0]["column"] as? Int == 17)
        #expect(items[0]["hint"] as? String == "did you mean 'encoding'?")
        let github = try await FetchctlProcess.run(["validate", "--format", "github", "r.yaml"], in: dir)
        #expect(github.stdout == "::error file=r.yaml,line=5,col=17,title=unknown-key::unknown key 'encodng' in route 'a' (did you mean 'encoding'?)\n")
    }

    @Test func missingFileIsExit2() async throws {
        let result = try await FetchctlProcess.run(["validate", "does-not-exist.yaml"])
        #expect(result.status == 2)
        #expect(result.stdout.hasPrefix("does-not-exist.yaml:1:1: error: no such file 'does-not-exist.yaml'"))
    }

    @Test func routesListsEveryRoute() async throws {
        let result = try await FetchctlProcess.run(["routes", "examples/github/jobs.yaml"], environment: ["GITHUB_TOKEN": "x"])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("ROUTE") == true)
        #expect(lines.contains { $0.hasPrefix("github.list_commits") && $0.contains("https://api.github.com/repos/{{owner}}/{{repo}}/commits")
            && $0.contains("link rel=next, items $[*]") })
        #expect(lines.contains { $0.hasPrefix("github.latest_release") && $0.contains("  -  ") })
    }

    @Test func renderShowsTheRequestWithSecretsHidden() async throws {
        let env = ["GITHUB_TOKEN": "ghp_supersecret"]
        let args = ["render", "examples/github/github.routes.yaml", "github.user_repositories", "--param", "per_page=5"]
        let hidden = try await FetchctlProcess.run(args, environment: env)
        #expect(hidden.status == 0, "\(hidden.stderr)")
        #expect(hidden.stdout.hasPrefix("curl 'https://api.github.com/user/repos?per_page=5&sort=updated&visibility=all'"))
        #expect(hidden.stdout.contains("-H 'Authorization: <redacted>'"))
        #expect(!hidden.stdout.contains("ghp_supersecret") && !hidden.stderr.contains("ghp_supersecret"))
        let shown = try await FetchctlProcess.run(args + ["--show-secrets", "--format", "http"], environment: env)
        #expect(shown.stdout.hasPrefix("GET /user/repos?per_page=5&sort=updated&visibility=all HTTP/1.1\nHost: api.github.com\n"))
        #expect(shown.stdout.contains("Authorization: Bearer ghp_supersecret\n"))
    }

    @Test func renderCommandLineMistakesExit64() async throws {
        let base = ["render", "examples/github/github.routes.yaml"]
        let badParam = try await FetchctlProcess.run(base + ["github.search_repositories", "--param", "query=x", "--param", "page=two"])
        #expect(badParam.status == 64)
        #expect(badParam.stderr.contains("param 'page' must be an integer, found 'two'"))
        let unknown = try await FetchctlProcess.run(base + ["github.serch_repositories"])
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("unknown route 'github.serch_repositories' (did you mean 'github.search_repositories'?)"))
        let malformed = try await FetchctlProcess.run(base + ["github.search_repositories", "--param", "novalue"])
        #expect(malformed.status == 64)
    }

    @Test(arguments: ["routes", "jobs"])
    func schemaMatchesTheCommittedFile(_ kind: String) async throws {
        let result = try await FetchctlProcess.run(["schema", kind])
        let file = try String(contentsOf: FetchctlProcess.root.appendingPathComponent("schemas/\(kind).schema.json"), encoding: .utf8)
        #expect(result.status == 0)
        #expect(result.stdout == file)
    }

    @Test func versionAndHelp() async throws {
        let version = try await FetchctlProcess.run(["--version"])
        #expect(version.stdout == "0.1.0\n")
        for command in ["validate", "routes", "render", "schema"] {
            let help = try await FetchctlProcess.run([command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("Examples:"), "\(command)")
        }
    }

    /// `fetchctl run FILE …` is parsed with `run` as ArgumentParser's root (main.swift), any other
    /// shape of `run` as `fetchctl`'s subcommand: the same mistake gets the same message, usage
    /// line and exit code either way. The second command line of each pair has a shape the first
    /// path does not take (an option before the file, or `--`).
    @Test func runsCommandLineMistakesReadTheSameWhicheverWayTheyAreParsed() async throws {
        let fixture = try TemporaryDirectory.make(prefix: "fetchctl-run-args")
        try "version: 1\njobs:\n  - id: a\n    url: \"http://127.0.0.1:9/x\"\n".write(toFile: fixture + "/jobs.yaml", atomically: true, encoding: .utf8)
        let pairs: [([String], [String])] = [
            (["run", "jobs.yaml", "--bogus"], ["run", "--bogus", "jobs.yaml"]),
            (["run", "jobs.yaml", "--concurrency", "0"], ["run", "--concurrency", "0", "jobs.yaml"]),
            (["run", "jobs.yaml", "--log-format", "xml"], ["run", "--log-format", "xml", "jobs.yaml"]),
            (["run", "jobs.yaml", "extra"], ["run", "--", "jobs.yaml", "extra"]),
        ]
        for (asRoot, asSubcommand) in pairs {
            let first = try await FetchctlProcess.run(asRoot, in: URL(fileURLWithPath: fixture))
            let second = try await FetchctlProcess.run(asSubcommand, in: URL(fileURLWithPath: fixture))
            #expect(first.status == 64 && second.status == 64, "\(asRoot): \(first.status), \(second.status)")
            #expect(first.stderr == second.stderr, "\(asRoot)")
            #expect(first.stderr.contains("Usage: fetchctl run [<options>] <jobs-file>\n  See 'fetchctl run --help' for more information."), "\(first.stderr)")
        }
    }
}
