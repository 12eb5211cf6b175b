import Testing
@testable import FetchKit

/// The mistakes a user can make with the response cache's keys, on the exact text `validate` prints.
@Suite struct CacheDiagnosticsTests {
    @Test func storeKeysBelongInSettings() throws {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            settings: {cache: {max_size: 10MB, dir: cache-here, heuristic: true}}
            jobs:
              - {id: a, url: "https://example.org/a", cache: {max_size: 1MB}}
            """])
        #expect(fixture.diagnostics("jobs.yaml") == """
            jobs.yaml:4:51: error: 'cache.max_size' belongs in the jobs file's settings: a run has one response cache (move it to settings: {cache: {max_size: …}})
              - {id: a, url: "https://example.org/a", cache: {max_size: 1MB}}
                                                              ^

            """)
        let settings = try #require(fixture.load("jobs.yaml").jobsFile?.settings)
        #expect(settings.cacheMaxSize == 10_000_000)
        #expect(settings.cacheDir == fixture.path("cache-here"))
        #expect(settings.behaviour.cache.heuristic == true)
    }

    @Test func aCacheBlockThatCanDoNothingIsAWarning() throws {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            jobs:
              - {id: post, url: "https://example.org/a", method: POST, cache: {behavior: cache}}
              - {id: file, url: "https://example.org/f.tar", download: f.tar, cache: {policy: reload}}
              - {id: both, url: "https://example.org/b", cache: {policy: reload, stale_if_error: 1d}}
            """])
        #expect(fixture.diagnostics("jobs.yaml") == """
            jobs.yaml:3:60: warning: only GET and HEAD responses are cached; this POST request's 'cache' block has no effect (a successful POST invalidates what is stored for its URL)
              - {id: post, url: "https://example.org/a", method: POST, cache: {behavior: cache}}
                                                                       ^
            jobs.yaml:4:67: warning: downloads never go through the response cache; this 'cache' block has no effect (a rerun asks with the download's recorded ETag/Last-Modified and is up_to_date on 304)
              - {id: file, url: "https://example.org/f.tar", download: f.tar, cache: {policy: reload}}
                                                                              ^
            jobs.yaml:5:86: warning: stale_if_error has no effect with policy reload (it never uses stored responses)
              - {id: both, url: "https://example.org/b", cache: {policy: reload, stale_if_error: 1d}}
                                                                                                 ^

            """)
    }

    @Test func saveHeadersFollowsTheOutputPathRules() throws {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            settings: {output_dir: out}
            jobs:
              - {id: a, url: "https://example.org/a", save: a.json, save_headers: ../a.headers}
              - {id: b, url: "https://example.org/b", save: b.json, save_headers: a.json}
            """])
        let text = fixture.diagnostics("jobs.yaml")
        #expect(text.contains("jobs.yaml:4:71: error: output path '../a.headers' of job 'a' is outside output_dir"))
        #expect(text.contains("jobs.yaml:5:71: error: jobs 'a' and 'b' both write 'a.json'"))
    }
}
