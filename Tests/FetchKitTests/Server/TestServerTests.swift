import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import FetchKitTesting
import Testing

/// The local test server itself, checked with Foundation's URLSession on 127.0.0.1 (FetchKit's own
/// client is tested against this server elsewhere).
@Suite struct TestServerTests {
    func get(_ server: TestServer, _ path: String, headers: [String: String] = [:], method: String = "GET",
             body: Data? = nil) async throws -> (HTTPURLResponse, Data) {
        var request = URLRequest(url: URL(string: server.baseURL + path)!)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        return (response as! HTTPURLResponse, data)
    }

    func withServer(_ body: (TestServer) async throws -> Void) async throws {
        let server = try await TestServer.start()
        do {
            try await body(server)
        } catch {
            try await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    @Test func servesGeneratedBytesWithValidators() async throws {
        try await withServer { server in
            #expect(server.baseURL.hasPrefix("http://127.0.0.1:"))
            let (response, data) = try await get(server, "/bytes/1000?seed=7")
            #expect(response.statusCode == 200)
            #expect(Array(data) == GeneratedBytes.bytes(0..<1000, seed: 7))
            #expect(response.value(forHTTPHeaderField: "ETag") == "\"v1-1000-7\"")
            #expect(response.value(forHTTPHeaderField: "Accept-Ranges") == "bytes")
        }
    }

    @Test func answersRangesIfRangeAndConditionalRequests() async throws {
        try await withServer { server in
            let (partial, tail) = try await get(server, "/bytes/1000", headers: ["Range": "bytes=990-", "If-Range": "\"v1-1000-0\""])
            #expect(partial.statusCode == 206)
            #expect(partial.value(forHTTPHeaderField: "Content-Range") == "bytes 990-999/1000")
            #expect(Array(tail) == GeneratedBytes.bytes(990..<1000, seed: 0))
            let (changed, full) = try await get(server, "/bytes/1000?version=v2", headers: ["Range": "bytes=990-", "If-Range": "\"v1-1000-0\""])
            #expect(changed.statusCode == 200)
            #expect(full.count == 1000)
            let (beyond, _) = try await get(server, "/bytes/1000", headers: ["Range": "bytes=1000-"])
            #expect(beyond.statusCode == 416)
            #expect(beyond.value(forHTTPHeaderField: "Content-Range") == "bytes */1000")
            let (notModified, empty) = try await get(server, "/bytes/1000", headers: ["If-None-Match": "\"v1-1000-0\""])
            #expect(notModified.statusCode == 304)
            #expect(empty.isEmpty)
        }
    }

    @Test func flakyFailsThenSucceedsAndRecordsEveryAttempt() async throws {
        try await withServer { server in
            for attempt in 1...3 {
                let (response, _) = try await get(server, "/flaky/k1?fail=2&status=429&retry_after=1")
                #expect(response.statusCode == (attempt <= 2 ? 429 : 200))
                #expect(response.value(forHTTPHeaderField: "Retry-After") == (attempt <= 2 ? "1" : nil))
            }
            let log = server.state.requests(pathPrefix: "/flaky/k1")
            #expect(log.count == 3)
            #expect(zip(log, log.dropFirst()).allSatisfy { $0.time <= $1.time })
        }
    }

    @Test func echoReturnsWhatItReceived() async throws {
        try await withServer { server in
            let (response, data) = try await get(server, "/echo/x?a=1&b=two", headers: ["X-Test": "yes"], method: "POST",
                                                 body: Data("hello".utf8))
            #expect(response.statusCode == 200)
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(object["method"] as? String == "POST")
            #expect(object["path"] as? String == "/echo/x")
            #expect(object["query"] as? String == "a=1&b=two")
            #expect(object["body"] as? String == "hello")
            let headers = try #require(object["headers"] as? [[String]])
            #expect(headers.contains(["X-Test", "yes"]))
            #expect(server.state.requests.last?.header("x-test") == "yes")
        }
    }

    @Test func dropsTheConnectionMidBodyOnlyForTheFirstAttempts() async throws {
        try await withServer { server in
            await #expect(throws: (any Error).self) {
                _ = try await get(server, "/bytes/200000?drop_after=70000&key=d1&times=1")
            }
            let (response, data) = try await get(server, "/bytes/200000?drop_after=70000&key=d1&times=1")
            #expect(response.statusCode == 200)
            #expect(data.count == 200_000)
        }
    }

    @Test func bearerAndOAuthEndpoints() async throws {
        try await withServer { server in
            let (denied, _) = try await get(server, "/bearer?token=t1")
            #expect(denied.statusCode == 401)
            let (allowed, _) = try await get(server, "/bearer?token=t1", headers: ["Authorization": "Bearer t1"])
            #expect(allowed.statusCode == 200)
            let (tokenResponse, tokenBody) = try await get(server, "/oauth/token", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                                           method: "POST", body: Data("grant_type=client_credentials&client_id=c".utf8))
            #expect(tokenResponse.statusCode == 200)
            #expect(String(decoding: tokenBody, as: UTF8.self).contains(#""access_token":"tok-1""#))
            #expect(server.state.tokensIssued == 1)
        }
    }

    @Test func redirectsAndCacheValidators() async throws {
        try await withServer { server in
            let (redirected, _) = try await get(server, "/redirect/3")
            #expect(redirected.statusCode == 200)
            #expect(server.state.requests(pathPrefix: "/redirect/").map(\.path) == ["/redirect/3", "/redirect/2", "/redirect/1", "/redirect/0"])
            let (fresh, _) = try await get(server, "/cache/t?max_age=30")
            #expect(fresh.value(forHTTPHeaderField: "Cache-Control") == "max-age=30")
            #expect(fresh.value(forHTTPHeaderField: "ETag") == "\"v1\"")
            let (revalidated, _) = try await get(server, "/cache/t?max_age=30", headers: ["If-None-Match": "W/\"v0\", \"v1\""])
            #expect(revalidated.statusCode == 304)
            let (byDate, _) = try await get(server, "/cache/t?etag=none",
                                            headers: ["If-Modified-Since": "Sat, 21 Nov 2026 12:00:00 GMT"])
            #expect(byDate.statusCode == 304)
            server.state.setCacheVersion("t", "v2")
            let (changed, _) = try await get(server, "/cache/t?max_age=30", headers: ["If-None-Match": "\"v1\""])
            #expect(changed.statusCode == 200)
            #expect(server.state.cacheServed("t") == 2)
        }
    }
}
