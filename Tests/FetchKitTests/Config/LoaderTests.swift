import Testing
@testable import FetchKit

/// The typed model the loader builds: layering, matrix expansion, needs, output paths, secrets.
@Suite struct LoaderTests {
    static let routes = """
        version: 1
        service: gh
        base_url: ${GH_API:-https://api.github.com}
        defaults:
          headers: {Accept: application/vnd.github+json}
          retry: {limit: 3, backoff: {scale: 1s}}
          timeout: {connect: 5s}
        routes:
          commits:
            path: /repos/{{owner}}/{{repo}}/commits
            retry: {backoff: {max: 10s}}
            validate: {status: ["2xx", 304], content_type: accept}
        """

    static let jobs = """
        version: 1
        include: [gh.routes.yaml]
        settings:
          concurrency: 3
          per_host: 2
          rate_limits: {api.github.com: 10/s}
          output_dir: data
          retry: {limit: 9, budget: 1m, backoff: {base: 3}}
          headers: {User-Agent: mine, Accept: text/plain}
        jobs:
          - id: commits
            route: gh.commits
            matrix: {owner: [apple, swiftlang], repo: [swift, "swift-nio"]}
            params: {owner: "{{matrix.owner}}", repo: "{{matrix.repo}}"}
            save: "commits/{{matrix.owner}}-{{matrix.repo}}.json"
            headers: {X-Job: "{{matrix.repo}}"}
          - id: after
            url: https://example.org/done?who={{who}}
            params: {who: me}
            needs: [commits]
            retry: {backoff: {scale: 2s}}
        """

    func load() throws -> (ConfigFixture, LoadedConfig) {
        let fixture = try ConfigFixture(["gh.routes.yaml": Self.routes, "jobs.yaml": Self.jobs])
        let config = fixture.load("jobs.yaml")
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
        return (fixture, config)
    }

    @Test func settingsAndPaths() throws {
        let (fixture, config) = try load()
        let settings = try #require(config.jobsFile?.settings)
        #expect(settings.concurrency == 3)
        #expect(settings.perHost == 2)
        #expect(settings.rateLimits.map(\.host) == ["api.github.com"])
        #expect(settings.outputDir == fixture.path("data"))
        #expect(settings.stateDir == fixture.path(".fetchctl"))
    }

    @Test func matrixExpandsInOrderWithReadableIDs() throws {
        let (fixture, config) = try load()
        #expect(config.jobs.map(\.id) == [
            "commits[owner=apple,repo=swift]", "commits[owner=apple,repo=swift-nio]",
            "commits[owner=swiftlang,repo=swift]", "commits[owner=swiftlang,repo=swift-nio]", "after",
        ])
        let first = config.jobs[0]
        #expect(first.params == ["owner": "apple", "repo": "swift"])
        #expect(first.savePath == fixture.path("data/commits/apple-swift.json"))
        #expect(config.jobs[4].needs == Array(config.jobs[0..<4].map(\.id)))
    }

    @Test func behaviourLayersJobOverRouteOverDefaultsOverSettings() throws {
        let (_, config) = try load()
        let retry = config.jobs[0].behaviour.retry
        #expect(retry.limit == 3)                      // route file defaults beat settings
        #expect(retry.backoffScale == .seconds(1))      // defaults
        #expect(retry.backoffMax == .seconds(10))       // route, merged deeply
        #expect(retry.backoffBase == 3)                 // settings
        #expect(retry.budget == .seconds(60))           // settings
        #expect(config.jobs[0].behaviour.timeout.connect == .seconds(5))
        #expect(config.jobs[0].behaviour.validate.status == StatusSet([200...299, 304...304]))
        let adHoc = config.jobs[4].behaviour.retry
        #expect(adHoc.limit == 9)
        #expect(adHoc.backoffScale == .seconds(2))
        #expect(adHoc.backoffBase == 3)
    }

    @Test func jobRequestsCarryLayeredHeadersAndMatrixValues() throws {
        let (_, config) = try load()
        let request = try config.jobs[1].router.makeRequest()
        #expect(request.url.absoluteString == "https://api.github.com/repos/apple/swift-nio/commits")
        #expect(request.headers.map { "\($0.name): \($0.value)" } == [
            "User-Agent: mine", "Accept: application/vnd.github+json", "X-Job: swift-nio",
        ])
        let adHoc = try config.jobs[4].router.makeRequest()
        #expect(adHoc.url.absoluteString == "https://example.org/done?who=me")
    }

    @Test func environmentOverridesBaseURLAndSecretsAreCollected() throws {
        let fixture = try ConfigFixture(["gh.routes.yaml": Self.routes + "\n    auth: {bearer: \"${GH_TOKEN}\"}\n", "jobs.yaml": Self.jobs])
        let config = fixture.load("jobs.yaml", environment: ["GH_API": "http://127.0.0.1:8080", "GH_TOKEN": "ghp_x"])
        #expect(!config.hasErrors)
        #expect(config.routes["gh.commits"]?.urlTemplate == "http://127.0.0.1:8080/repos/{{owner}}/{{repo}}/commits")
        #expect(config.secrets.contains("ghp_x"))
        #expect(config.redactor.redact("token ghp_x") == "token <redacted>")
    }
}

@Suite struct YAMLFeatureTests {
    @Test func mergeKeysAndAnchorsShareBlocks() throws {
        let fixture = try ConfigFixture(["r.yaml": """
            version: 1
            service: api
            base_url: https://a.org
            routes:
              list: &base
                path: /list
                retry: {limit: 5}
                headers: {Accept: text/csv}
              other:
                <<: *base
                path: /other
            """])
        let config = fixture.load("r.yaml")
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
        let other = try #require(config.routes["api.other"])
        #expect(other.urlTemplate == "https://a.org/other")
        #expect(other.behaviour.retry.limit == 5)
        #expect(other.behaviour.resolvedHeaders["accept"] == "text/csv")
    }

    @Test func plainScalarsAreTypedQuotedOnesStayStrings() {
        #expect(PlainScalar.value("42") == .int(42))
        #expect(PlainScalar.value("-1_000") == .int(-1000))
        #expect(PlainScalar.value("0x1F") == .int(31))
        #expect(PlainScalar.value("1.5") == .double(1.5))
        #expect(PlainScalar.value("1e3") == .double(1000))
        #expect(PlainScalar.value("yes") == .bool(true))
        #expect(PlainScalar.value("~") == .null)
        #expect(PlainScalar.value("") == .null)
        #expect(PlainScalar.value("OFF") == .bool(false))
        #expect(PlainScalar.value("-.inf") == .double(-.infinity))
        #expect(PlainScalar.value("0") == .int(0))
        #expect(PlainScalar.value("1.2.3") == nil)
        #expect(PlainScalar.value("v1") == nil)
        #expect(PlainScalar.value("2026-11-21") == nil)
    }
}
