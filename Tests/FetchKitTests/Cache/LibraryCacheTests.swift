import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// The response cache from Swift, without YAML: `SQLiteResponseCache`'s doc comment example, run
/// against the local server, and Alamofire's `ResponseCacher` behaviours on a `Session`.
@Suite struct LibraryCacheTests {
    @Test func theDocCommentExampleWorks() async throws {
        let server = try await TestServer.start()
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let items = server.baseURL + "/cache/items?max_age=600"
        // From SQLiteResponseCache's doc comment, with the local server's URL and a temporary directory.
        let cache = try SQLiteResponseCache(directory: directory)
        let session = Session(cache: cache)
        var options = RequestOptions()
        options.cache = RequestCacheOptions(staleIfError: .seconds(86_400))
        let first = try await session.data(items, options: options)
        let again = try await session.data(items, options: options)
        await cache.finishRun(id: "nightly", maxSize: 1 << 30)
        try await session.shutdown()

        #expect(first.response.cache == .miss)
        #expect(again.response.cache == .hit)
        #expect(again.data == first.data)
        #expect(again.response.head.headers["Age"] != nil)
        #expect(server.state.cacheServed("items") == 1)
        let stats = try await cache.statistics()
        #expect(stats.lastRun?.hits == 1)
        #expect(stats.lastRun?.misses == 1)
        try await server.shutdown()
    }

    @Test func responseCacherModifyAndDoNotCache() async throws {
        let server = try await TestServer.start()
        let cache = try SQLiteResponseCache(directory: try TemporaryDirectory.make(prefix: "fetchctl-tests"))
        let session = Session(cache: cache)
        var keep = RequestOptions()
        keep.cache = RequestCacheOptions(handler: ResponseCacher.modify(ttl: 600, stripHeaders: ["Content-Type"]))
        var skip = RequestOptions()
        skip.cache = RequestCacheOptions(handler: ResponseCacher.doNotCache)
        let noFreshness = server.baseURL + "/cache/mod?cache_control=none&etag=none&last_modified=none"
        _ = try await session.data(noFreshness, options: keep)
        let modified = try await session.data(noFreshness, options: keep)
        #expect(modified.response.cache == .hit, "the ttl made it fresh")
        #expect(modified.response.head.headers["Content-Type"] == nil)
        let other = server.baseURL + "/cache/skip?max_age=600"
        _ = try await session.data(other, options: skip)
        let skipped = try await session.data(other, options: skip)
        #expect(skipped.response.cache == .miss)
        try await session.shutdown()
        try await server.shutdown()
    }

    @Test func aSessionWithoutOptionsCacheNeverConsultsTheCache() async throws {
        let server = try await TestServer.start()
        let cache = try SQLiteResponseCache(directory: try TemporaryDirectory.make(prefix: "fetchctl-tests"))
        let session = Session(cache: cache)
        let url = server.baseURL + "/cache/plain?max_age=600"
        _ = try await session.data(url)
        let second = try await session.data(url)
        #expect(second.response.cache == .miss)
        #expect(server.state.cacheServed("plain") == 2)
        try await session.shutdown()
        try await server.shutdown()
    }
}
