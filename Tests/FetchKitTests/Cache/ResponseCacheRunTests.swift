import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// The response cache as cron meets it: the same jobs file run again and again against the local
/// server, with the real SQLite store in the state directory. Each test asserts what reached the
/// server, what the log said and what landed on disk.
@Suite struct ResponseCacheRunTests {
    func fixture(_ jobs: String) async throws -> CacheFixture {
        try CacheFixture(server: try await TestServer.start(), jobs: jobs)
    }

    @Test func aFreshResponseIsServedWithoutARequest() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: api, url: "${BASE}/cache/fresh?max_age=600", save: api.json, save_headers: api.headers}
            """)
        let first = try await f.run()
        #expect(first.outcome("api") == .succeeded)
        #expect(first.cacheUses("api") == [.miss])
        let body = try #require(f.output("api.json"))
        try FileManager.default.removeItem(atPath: f.files.path("out/api.json"))

        let second = try await f.run()
        #expect(second.outcome("api") == .cached)
        #expect(second.cacheUses("api") == [.hit])
        #expect(second.events.started.isEmpty, "no request is sent for a fresh response")
        #expect(f.requests("fresh").count == 1)
        #expect(f.output("api.json") == body)
        let headers = try #require(f.output("api.headers"))
        #expect(headers.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(headers.contains("Cache-Control: max-age=600\r\n"))
        #expect(headers.contains("\r\nAge: "))
        #expect(headers.hasSuffix("\r\n\r\n"))
        #expect(second.summary.count(cache: .hit) == 1)
        try await f.server.shutdown()
    }

    @Test(arguments: [
        ("cache_control=no-cache", "If-None-Match", "\"v1\""),
        ("max_age=0", "If-None-Match", "\"v1\""),
        ("cache_control=no-cache&etag=none", "If-Modified-Since", "Sat, 21 Nov 2026 12:00:00 GMT"),
    ])
    func aStaleResponseIsRevalidatedAndA304WritesTheStoredBody(query: String, header: String, value: String) async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: api, url: "${BASE}/cache/reval?\(query)", save: api.json}
            """)
        _ = try await f.run()
        let body = try #require(f.output("api.json"))
        try FileManager.default.removeItem(atPath: f.files.path("out/api.json"))
        let second = try await f.run()
        #expect(second.outcome("api") == .succeeded)
        #expect(second.cacheUses("api") == [.revalidated])
        #expect(second.events.metrics.first?.metrics.status == 304)
        #expect(f.requests("reval").last?.header(header) == value)
        #expect(f.server.state.cacheServed("reval") == 1, "the second request got a 304, not a body")
        #expect(f.output("api.json") == body, "the save is written from the stored body")
        #expect(second.summary.count(cache: .revalidated) == 1)
        try await f.server.shutdown()
    }

    @Test func aChangedResourceReplacesTheStoredOne() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: api, url: "${BASE}/cache/changing?max_age=0", save: api.json}
            """)
        _ = try await f.run()
        f.server.state.setCacheVersion("changing", "v2")
        let second = try await f.run()
        #expect(second.cacheUses("api") == [.miss])
        #expect(f.output("api.json")?.contains(#""version":"v2""#) == true)
        f.server.state.setCacheVersion("changing", "v2")
        let third = try await f.run()
        #expect(third.cacheUses("api") == [.revalidated])
        #expect(f.requests("changing").last?.header("If-None-Match") == "\"v2\"")
        try await f.server.shutdown()
    }

    @Test func freshnessComesFromExpiresDateAndAge() async throws {
        let inAMinute = HTTPDate.format(Date().addingTimeInterval(60)).replacingOccurrences(of: " ", with: "%20")
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: expires, url: "${BASE}/cache/expires?cache_control=none&expires=\(inAMinute)", save: expires.json}
              - {id: expired, url: "${BASE}/cache/expired?cache_control=none&expires=0", save: expired.json}
              - {id: aged, url: "${BASE}/cache/aged?max_age=60&age=100", save: aged.json}
              - {id: old-date, url: "${BASE}/cache/old-date?max_age=60&date_offset=-120", save: old.json}
            """)
        _ = try await f.run()
        let second = try await f.run()
        #expect(second.cacheUses("expires") == [.hit])
        #expect(second.cacheUses("expired") == [.revalidated], "Expires: 0 is already expired")
        #expect(second.cacheUses("aged") == [.revalidated], "an Age past max-age arrives stale")
        #expect(second.cacheUses("old-date") == [.revalidated], "a Date two minutes old uses up max-age=60")
        try await f.server.shutdown()
    }

    @Test func noStoreIsNeverStoredAndSetCookieNeverWritten() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: private, url: "${BASE}/cache/nostore?cache_control=no-store", save: a.json}
              - {id: cookie, url: "${BASE}/cache/cookie?max_age=600&set_cookie=1", save: b.json, save_headers: b.headers}
            """)
        _ = try await f.run()
        let second = try await f.run()
        #expect(second.cacheUses("private") == [.miss])
        #expect(second.cacheUses("cookie") == [.hit])
        #expect(f.output("b.headers")?.contains("Set-Cookie") == false, "a stored response has no Set-Cookie")
        for file in FileManager.default.enumerator(atPath: f.cacheDirectory)?.allObjects as? [String] ?? [] {
            let data = (try? Data(contentsOf: URL(fileURLWithPath: f.cacheDirectory + "/" + file))) ?? Data()
            #expect(data.range(of: Data("issued-by-server-7f3a9c".utf8)) == nil, "\(file) holds the cookie")
        }
        try await f.server.shutdown()
    }

    @Test func aFirstRunSavesSetCookieOnlyAsRedacted() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: cookie, url: "${BASE}/cache/c2?max_age=600&set_cookie=1", save: b.json, save_headers: b.headers}
            """)
        _ = try await f.run()
        #expect(f.output("b.headers")?.contains("Set-Cookie: <redacted>\r\n") == true)
        try await f.server.shutdown()
    }

    @Test func requestDirectivesForceRevalidationOrForbidTheNetwork() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: plain, url: "${BASE}/cache/directives?max_age=600", save: plain.json}
              - {id: no-cache, url: "${BASE}/cache/directives?max_age=600", save: nc.json, headers: {Cache-Control: no-cache}, needs: [plain]}
              - {id: pragma, url: "${BASE}/cache/directives?max_age=600", save: p.json, headers: {Pragma: no-cache}, needs: [plain]}
              - {id: max-age, url: "${BASE}/cache/directives?max_age=600&date_offset=-30", save: ma.json, headers: {Cache-Control: max-age=10}}
              - {id: only-if-cached, url: "${BASE}/cache/never-fetched", save: o.json, headers: {Cache-Control: only-if-cached}}
            """)
        let first = try await f.run()
        #expect(first.cacheUses("no-cache") == [.revalidated], "Cache-Control: no-cache on the request revalidates a fresh response")
        #expect(first.cacheUses("pragma") == [.revalidated])
        #expect(first.outcome("only-if-cached") == .failed)
        #expect(first.result("only-if-cached")?.error?.code == .notCached)
        #expect(f.requests("never-fetched").isEmpty)
        let second = try await f.run()
        #expect(second.cacheUses("plain") == [.hit])
        #expect(second.cacheUses("max-age") == [.revalidated], "older than the request's max-age=10")
        try await f.server.shutdown()
    }

    @Test func varyKeepsVariantsApart() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: en, url: "${BASE}/cache/vary?max_age=600&vary=X-Lang", save: en.json, headers: {X-Lang: en}}
              - {id: fr, url: "${BASE}/cache/vary?max_age=600&vary=X-Lang", save: fr.json, headers: {X-Lang: fr}, needs: [en]}
              - {id: none, url: "${BASE}/cache/vary?max_age=600&vary=X-Lang", save: none.json, needs: [fr]}
              - {id: star, url: "${BASE}/cache/star?max_age=600&vary=*", save: star.json}
            """)
        let first = try await f.run()
        #expect(first.cacheUses("fr") == [.miss], "another X-Lang is another variant")
        #expect(first.cacheUses("none") == [.miss], "no X-Lang is another variant too")
        let second = try await f.run()
        #expect(second.cacheUses("en") == [.hit])
        #expect(second.cacheUses("fr") == [.hit])
        #expect(second.cacheUses("none") == [.hit])
        #expect(f.output("en.json")?.contains(#""varied":"en""#) == true)
        #expect(f.output("fr.json")?.contains(#""varied":"fr""#) == true)
        #expect(second.cacheUses("star") == [.miss], "Vary: * never matches")
        try await f.server.shutdown()
    }

    @Test(arguments: [false, true])
    func credentialsAreStoredOnlyWhenTheRouteSaysSo(explicit: Bool) async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - id: me
                url: "${BASE}/cache/me?max_age=600"
                auth: {bearer: "${API_TOKEN}"}
                save: me.json
            \(explicit ? "    cache: {behavior: cache}" : "")
            """)
        _ = try await f.run(environment: ["API_TOKEN": "tok-123"])
        let second = try await f.run(environment: ["API_TOKEN": "tok-123"])
        #expect(second.cacheUses("me") == [explicit ? .hit : .miss])
        #expect(f.requests("me").count == (explicit ? 1 : 2))
        try await f.server.shutdown()
    }

    @Test func aSuccessfulUnsafeRequestInvalidatesTheURL() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: read, url: "${BASE}/cache/item?max_age=600", save: item.json}
              - {id: other, url: "${BASE}/cache/other?max_age=600", save: other.json}
              - {id: write, url: "${BASE}/cache/item?max_age=600", method: POST, body: {text: "x"}, needs: [read, other]}
              - {id: reread, url: "${BASE}/cache/item?max_age=600", save: item2.json, needs: [write]}
              - {id: reother, url: "${BASE}/cache/other?max_age=600", save: other2.json, needs: [write]}
            """)
        let run = try await f.run()
        #expect(run.cacheUses("reread") == [.miss], "the POST invalidated what was stored for its URL")
        #expect(run.cacheUses("reother") == [.hit], "other URLs stay")
        try await f.server.shutdown()
    }

    @Test func staleIfErrorServesTheStoredResponseWhenTheOriginFails() async throws {
        let f = try await fixture("""
            settings: {output_dir: out, retry: {limit: 1, backoff: {scale: 10ms}}}
            jobs:
              - {id: covered, url: "${BASE}/cache/down?max_age=0", save: covered.json, cache: {stale_if_error: 1d}}
              - {id: uncovered, url: "${BASE}/cache/down2?max_age=0", save: uncovered.json}
              - {id: directive, url: "${BASE}/cache/down3?cache_control=max-age%3D0,%20stale-if-error%3D3600", save: d.json}
              - {id: must, url: "${BASE}/cache/down4?cache_control=max-age%3D0,%20must-revalidate", save: m.json, cache: {stale_if_error: 1d}}
            """)
        _ = try await f.run()
        let body = f.output("covered.json")
        for key in ["down", "down2", "down3", "down4"] { f.server.state.setCacheFailure(key, status: 503) }
        let second = try await f.run()
        #expect(second.outcome("covered") == .succeeded)
        #expect(second.result("covered")?.cache == .stale)
        let stale = try #require(second.events.metrics.first { $0.job == "covered" && $0.metrics.cache == .stale })
        #expect(stale.metrics.hiddenError?.code == .status)
        #expect(stale.metrics.hiddenError?.status == 503)
        #expect(f.output("covered.json") == body)
        #expect(second.outcome("uncovered") == .failed)
        #expect(second.outcome("directive") == .succeeded, "the response's own stale-if-error allows it")
        #expect(second.outcome("must") == .failed, "must-revalidate forbids serving it stale")
        #expect(second.summary.count(cache: .stale) == 2)
        try await f.server.shutdown()
    }

    @Test func staleIfErrorCoversAServerThatIsGone() async throws {
        let server = try await TestServer.start()
        let f = try CacheFixture(server: server, jobs: """
            settings: {output_dir: out, retry: {limit: 0}}
            jobs:
              - {id: api, url: "${BASE}/cache/gone?max_age=0", save: api.json, cache: {stale_if_error: 1h}}
            """)
        _ = try await f.run()
        try await server.shutdown()
        let second = try await f.run()
        #expect(second.outcome("api") == .succeeded)
        #expect(second.result("api")?.cache == .stale)
        #expect(second.events.metrics.last?.metrics.hiddenError?.code == .connection)
    }

    @Test func offlineRunsFromTheCacheAlone() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: stored, url: "${BASE}/cache/off?cache_control=no-cache", save: off.json}
              - {id: never, url: "${BASE}/cache/off-never", save: never.json}
            """)
        f.server.state.setCacheFailure("off-never", status: 500)
        _ = try await f.run()
        let before = f.server.state.requests.count
        try FileManager.default.removeItem(atPath: f.files.path("out/off.json"))
        let offline = try await f.run(offline: true)
        #expect(f.server.state.requests.count == before, "nothing was sent")
        #expect(offline.events.started.isEmpty)
        #expect(offline.outcome("stored") == .cached)
        #expect(offline.outcome("never") == .failed)
        #expect(offline.result("never")?.error?.code == .notCached)
        #expect(f.output("off.json")?.contains(#""key":"off""#) == true)
        try await f.server.shutdown()
    }

    @Test func policiesDecideBetweenTheStoreAndTheNetwork() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: else-load, url: "${BASE}/cache/p1?max_age=0", save: p1.json, cache: {policy: return_cache_else_load}}
              - {id: reload, url: "${BASE}/cache/p2?max_age=600", save: p2.json, cache: {policy: reload}}
              - {id: dont-load, url: "${BASE}/cache/p3", save: p3.json, cache: {policy: return_cache_dont_load}}
            """)
        let first = try await f.run()
        #expect(first.cacheUses("else-load") == [.miss])
        #expect(first.outcome("dont-load") == .failed)
        #expect(f.requests("p3").isEmpty)
        let second = try await f.run()
        #expect(second.cacheUses("else-load") == [.hit], "a stale response is used as it is")
        #expect(second.cacheUses("reload") == [.miss], "reload ignores a fresh stored response")
        #expect(f.requests("p2").count == 2)
        try await f.server.shutdown()
    }

    @Test func behaviorsDecideWhatIsStored() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: not-cached, url: "${BASE}/cache/b1?max_age=600", save: b1.json, cache: {behavior: do_not_cache}}
              - id: modified
                url: "${BASE}/cache/b2?cache_control=none&etag=none&last_modified=none"
                save: b2.json
                save_headers: b2.headers
                cache: {behavior: {modify: {ttl: 10m, strip_headers: [Content-Type]}}}
            """)
        _ = try await f.run()
        let second = try await f.run()
        #expect(second.cacheUses("not-cached") == [.miss])
        #expect(second.cacheUses("modified") == [.hit], "the ttl made a response without freshness fresh for 10 minutes")
        #expect(f.output("b2.headers")?.contains("Content-Type") == false)
        try await f.server.shutdown()
    }

    @Test(arguments: [false, true])
    func heuristicFreshnessIsOffUnlessAskedFor(heuristic: Bool) async throws {
        let f = try await fixture("""
            settings: {output_dir: out, cache: {heuristic: \(heuristic)}}
            jobs:
              - {id: guess, url: "${BASE}/cache/guess?cache_control=none", save: g.json}
            """)
        _ = try await f.run()
        let second = try await f.run()
        // Last-Modified is 2026-11-21: a day or more ago, so 10% of it is hours of heuristic freshness.
        #expect(second.cacheUses("guess") == [heuristic ? .hit : .revalidated])
        try await f.server.shutdown()
    }

    @Test func compressedBodiesAreStoredAsTheJobReceivedThem() async throws {
        let f = try await fixture("""
            settings: {output_dir: out}
            jobs:
              - {id: gz, url: "${BASE}/cache/gz?max_age=600&size=5000&compress=1", save: gz.json}
            """)
        _ = try await f.run()
        let body = try #require(f.output("gz.json"))
        #expect(body.utf8.count == 5000)
        try FileManager.default.removeItem(atPath: f.files.path("out/gz.json"))
        let second = try await f.run()
        #expect(second.cacheUses("gz") == [.hit])
        #expect(f.output("gz.json") == body)
        try await f.server.shutdown()
    }

    @Test func theStoreIsPrunedToMaxSizeLeastRecentlyUsedFirst() async throws {
        let f = try await fixture("""
            settings: {output_dir: out, cache: {max_size: 2500}}
            jobs:
              - {id: a, url: "${BASE}/cache/a?max_age=600&size=1000", save: a.json}
              - {id: b, url: "${BASE}/cache/b?max_age=600&size=1000", save: b.json, needs: [a]}
              - {id: c, url: "${BASE}/cache/c?max_age=600&size=1000", save: c.json, needs: [b]}
            """)
        _ = try await f.run()
        let cache = try SQLiteResponseCache(directory: f.cacheDirectory, readOnly: true)
        let stats = try await cache.statistics()
        #expect(stats.entries == 2)
        #expect(stats.bytes == 2000)
        let urls = try await cache.list().map(\.url)
        #expect(urls.contains { $0.contains("/cache/a?") } == false, "the least recently used entry went first")
        try await f.server.shutdown()
    }

    @Test func sixtyFourJobsStoringAtOnceNeverLock() async throws {
        let values = (0..<64).map(String.init).joined(separator: ", ")
        let f = try await fixture("""
            settings: {output_dir: out, concurrency: 64, per_host: 64}
            jobs:
              - {id: many, url: "${BASE}/cache/many-{{matrix.n}}?max_age=600&size=4000", matrix: {n: [\(values)]}, save: "m/{{matrix.n}}.json"}
            """)
        let first = try await f.run()
        #expect(first.summary.count(.succeeded) == 64)
        #expect(first.events.problems.isEmpty, "\(first.events.problems)")
        let second = try await f.run()
        #expect(second.summary.count(.cached) == 64)
        #expect(second.events.problems.isEmpty, "\(second.events.problems)")
        try await f.server.shutdown()
    }
}

/// RFC 9111 §4.3.5 end to end: a `HEAD` whose validators no longer match makes the stored `GET`
/// response stale; one whose validators match freshens it.
@Suite struct HeadFresheningTests {
    @Test func aHeadWithNewValidatorsInvalidatesTheStoredGet() async throws {
        let f = try CacheFixture(server: try await TestServer.start(), jobs: """
            settings: {output_dir: out}
            jobs:
              - {id: get, url: "${BASE}/cache/doc?max_age=600", save: doc.json}
              - {id: head, url: "${BASE}/cache/doc?max_age=600", method: HEAD, needs: [get]}
              - {id: again, url: "${BASE}/cache/doc?max_age=600", save: again.json, needs: [head]}
            """)
        _ = try await f.run()
        let unchanged = try await f.run()
        #expect(unchanged.cacheUses("head") == [.hit], "the HEAD's own stored response answers it")
        #expect(unchanged.cacheUses("again") == [.hit])

        f.server.state.setCacheVersion("doc", "v2")
        // The same state directory with a jobs file whose HEAD must reach the server (`reload`).
        try """
            version: 1
            settings: {output_dir: out}
            jobs:
              - {id: head, url: "${BASE}/cache/doc?max_age=600", method: HEAD, cache: {policy: reload}}
              - {id: again, url: "${BASE}/cache/doc?max_age=600", save: again.json, needs: [head]}
            """.write(toFile: f.files.path("jobs.yaml"), atomically: true, encoding: .utf8)
        let changed = try await f.run()
        #expect(changed.cacheUses("head") == [.miss])
        #expect(changed.cacheUses("again") == [.miss], "the stored GET is stale once a HEAD showed another ETag")
        #expect(f.output("again.json")?.contains(#""version":"v2""#) == true)
        try await f.server.shutdown()
    }
}

/// What the cache must never do: answer a URL with another URL's response, or send a request offline.
@Suite struct CacheBoundaryTests {
    @Test func aRedirectedResponseIsNotStoredUnderTheFirstURL() async throws {
        let f = try CacheFixture(server: try await TestServer.start(), jobs: """
            settings: {output_dir: out}
            jobs:
              - {id: latest, url: "${BASE}/redirect-to?url=/cache/target%3Fmax_age%3D600", save: latest.json}
            """)
        _ = try await f.run()
        let second = try await f.run()
        #expect(second.outcome("latest") == .succeeded)
        #expect(second.events.metrics.allSatisfy { $0.metrics.cache == .miss }, "a 302's target is not the first URL's response")
        #expect(f.server.state.cacheServed("target") == 2)
        try await f.server.shutdown()
    }

    @Test func offlineSendsNoUnsafeRequest() async throws {
        let f = try CacheFixture(server: try await TestServer.start(), jobs: """
            settings: {output_dir: out}
            jobs:
              - {id: post, url: "${BASE}/cache/form", method: POST, body: {text: "x"}}
            """)
        let offline = try await f.run(offline: true)
        #expect(offline.outcome("post") == .failed)
        #expect(offline.result("post")?.error?.code == .notCached)
        #expect(f.server.state.requests.isEmpty)
        try await f.server.shutdown()
    }
}
