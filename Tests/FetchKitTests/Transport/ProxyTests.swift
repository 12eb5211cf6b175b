import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// Proxies: which requests go through one (curl's environment variables, `NO_PROXY`), and HTTPS
/// through the test proxy's `CONNECT` tunnels, with credentials, a refusal, a proxy that is gone.
@Suite struct ProxyTests {
    @Test func theEnvironmentIsReadAsCurlReadsIt() throws {
        let resolver = try ProxyResolver(environment: [
            "HTTPS_PROXY": "http://user:p%40ss@proxy.corp:3128",
            "HTTP_PROXY": "http://evil.example:80",  // uppercase HTTP_PROXY is ignored (httpoxy), as curl does
            "ALL_PROXY": "socks5h://socks.corp",
            "no_proxy": "localhost, .internal.corp, 10.0.0.0/8,example.org",
        ])
        let https = try #require(resolver.proxy(for: URL(string: "https://api.github.com/x")!))
        #expect(https == Proxy(kind: .http, host: "proxy.corp", port: 3128, username: "user", password: "p@ss"))
        #expect(https.description == "http://<redacted>@proxy.corp:3128")
        // http:// falls back to ALL_PROXY (SOCKS5, port 1080 by default, names resolved at the proxy).
        #expect(resolver.proxy(for: URL(string: "http://api.github.com/x")!) == Proxy(kind: .socks5, host: "socks.corp", port: 1080))
        for direct in ["https://localhost:8443/", "https://db.internal.corp/", "https://internal.corp/", "https://10.1.2.3/",
                       "https://example.org/", "https://www.example.org/"] {
            #expect(resolver.proxy(for: URL(string: direct)!) == nil, "\(direct)")
        }
        #expect(resolver.proxy(for: URL(string: "https://notexample.org/")!) != nil)
        #expect(resolver.proxy(for: URL(string: "https://11.0.0.1/")!) != nil)
        // Lowercase wins; the settings override the environment, "" sends everything direct.
        let lower = try ProxyResolver(environment: ["https_proxy": "proxy-a:1", "HTTPS_PROXY": "proxy-b:2"])
        #expect(lower.httpsProxy?.host == "proxy-a")
        let settings = try ProxyResolver(environment: ["HTTPS_PROXY": "proxy-b:2"], url: "http://proxy-c:3", noProxy: "*")
        #expect(settings.httpsProxy?.host == "proxy-c")
        #expect(settings.proxy(for: URL(string: "https://anything.example/")!) == nil)
        #expect(try ProxyResolver(environment: ["HTTPS_PROXY": "proxy-b:2"], url: "").proxy(for: URL(string: "https://x.example/")!) == nil)
    }

    @Test(arguments: ["https://proxy.corp:3128", "ftp://proxy.corp", "socks5://user:pw@socks.corp"])
    func unusableProxiesAreRefusedWithoutShowingCredentials(url: String) {
        #expect(throws: FetchError.self) { _ = try Proxy(parsing: url) }
        do {
            _ = try Proxy(parsing: url)
        } catch {
            let fetch = error as? FetchError
            #expect(fetch?.code == .proxy)
            #expect(fetch?.message.contains("pw") == false, "\(fetch?.message ?? "")")
        }
    }

    func withProxy(_ mode: TestProxy.Mode, proxyURL: ((TestProxy) -> String)? = nil,
                   _ body: (TestServer, TestProxy, Session, RequestOptions) async throws -> Void) async throws {
        let certificates = try TLSTests.certificates.get()
        let server = try await TestServer.start(tls: .init(certificates))
        let proxy = try await TestProxy.start(mode)
        let resolver = try ProxyResolver(environment: ["HTTPS_PROXY": proxyURL?(proxy) ?? proxy.url])
        let session = Session(configuration: Session.Configuration(proxies: resolver))
        var failure: Error?
        do {
            try await body(server, proxy, session, RequestOptions(tls: TLSOptions(caFile: certificates.caFile), retryPolicy: .fast(limit: 1)))
        } catch { failure = error }
        try await session.shutdown()
        try await proxy.shutdown()
        try await server.shutdown()
        if let failure { throw failure }
    }

    @Test func httpsGoesThroughTheProxysTunnel() async throws {
        try await withProxy(.open) { server, proxy, session, options in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<10 { group.addTask { _ = try await session.data(server.baseURL + "/echo?i=\(i)", options: options) } }
                try await group.waitForAll()
            }
            #expect(server.state.requests.count == 10)
            // HTTP/2 inside the tunnel: one CONNECT for the host, reused.
            #expect(proxy.requests.map(\.target) == ["127.0.0.1:\(server.port)"])
            #expect(proxy.requests.map(\.status) == [200])
        }
    }

    @Test func credentialsInTheProxyURLBecomeProxyAuthorization() async throws {
        try await withProxy(.requiresCredentials(username: "alice", password: "wonder land"),
                            proxyURL: { "http://alice:wonder%20land@127.0.0.1:\($0.port)" }) { server, proxy, session, options in
            let response = try await session.data(server.baseURL + "/echo", options: options)
            #expect(response.response.head.status == 200)
            #expect(proxy.requests.first?.proxyAuthorization == "Basic " + Data("alice:wonder land".utf8).base64EncodedString())
            // The proxy's credentials never reach the server.
            #expect(server.state.requests.first?.header("Proxy-Authorization") == nil)
        }
    }

    /// A 407 is never retried, and the proxy is not asked again in the run: retrying a wrong
    /// password, once per job, is how corporate accounts get locked.
    @Test func refusedCredentialsAreNotRetriedNorTriedAgain() async throws {
        try await withProxy(.requiresCredentials(username: "alice", password: "right"),
                            proxyURL: { "http://alice:wrong-secret-77@127.0.0.1:\($0.port)" }) { server, proxy, session, options in
            let error = await #expect(throws: FetchError.self) { _ = try await session.data(server.baseURL + "/echo", options: options) }
            #expect(error?.code == .proxyAuth)
            #expect(error?.message == "the proxy http://<redacted>@127.0.0.1:\(proxy.port) answered 407: it refused the credentials")
            #expect(error?.attempts == 1, "not retried")
            let again = await #expect(throws: FetchError.self) { _ = try await session.data(server.baseURL + "/echo?again=1", options: options) }
            #expect(again?.code == .proxyAuth)
            #expect(proxy.requests.map(\.status) == [407], "the proxy was asked once")
            #expect(server.state.requests.isEmpty)
        }
    }

    @Test func aRefusingProxyAndAMissingOneFailWithProxy() async throws {
        try await withProxy(.refuses) { server, proxy, session, options in
            let error = await #expect(throws: FetchError.self) { _ = try await session.data(server.baseURL + "/echo", options: options) }
            #expect(error?.code == .proxy)
            #expect(error?.message == "the proxy http://127.0.0.1:\(proxy.port) refused the tunnel to the server (wrong or missing credentials, or a blocked host or port)")
        }
        // A proxy port nothing listens on.
        try await withProxy(.open, proxyURL: { _ in "http://127.0.0.1:1" }) { server, _, session, options in
            let error = await #expect(throws: FetchError.self) { _ = try await session.data(server.baseURL + "/echo", options: options) }
            #expect(error?.code == .proxy)
            #expect(error?.message.hasPrefix("cannot reach the proxy http://127.0.0.1:1") == true, "\(error?.message ?? "")")
        }
    }

    @Test func noProxyHostsGoDirect() async throws {
        let certificates = try TLSTests.certificates.get()
        let server = try await TestServer.start(tls: .init(certificates))
        let proxy = try await TestProxy.start()
        let resolver = try ProxyResolver(environment: ["HTTPS_PROXY": proxy.url, "NO_PROXY": "127.0.0.1"])
        let session = Session(configuration: Session.Configuration(proxies: resolver))
        let response = try await session.data(server.baseURL + "/echo", options: RequestOptions(tls: TLSOptions(caFile: certificates.caFile)))
        #expect(response.response.head.status == 200)
        #expect(proxy.requests.isEmpty)
        try await session.shutdown()
        try await proxy.shutdown()
        try await server.shutdown()
    }

    /// Plain http:// is forwarded (absolute-form request line), not tunnelled: a proxy that allows
    /// `CONNECT` only to 443, as tinyproxy and squid do by default, still serves it.
    @Test func plainHTTPIsForwardedInAbsoluteForm() async throws {
        let server = try await TestServer.start()
        let proxy = try await TestProxy.start(.requiresCredentials(username: "bob", password: "p@ss"))
        let resolver = try ProxyResolver(environment: ["http_proxy": "http://bob:p%40ss@127.0.0.1:\(proxy.port)"])
        let session = Session(configuration: Session.Configuration(proxies: resolver))
        var failure: Error?
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<6 { group.addTask { _ = try await session.data(server.baseURL + "/echo?i=\(i)") } }
                try await group.waitForAll()
            }
            let post = try await session.data(BuiltRequest(method: .post, url: URL(string: server.baseURL + "/echo?form=1")!, body: .data(Data("a=1&b=2".utf8))))
            #expect(String(decoding: post.data, as: UTF8.self).contains(#""body": "a=1&b=2""#))
            #expect(proxy.requests.count == 7)
            #expect(Set(proxy.requests.map(\.target)) == Set((0..<6).map { "http://127.0.0.1:\(server.port)/echo?i=\($0)" } + ["http://127.0.0.1:\(server.port)/echo?form=1"]))
            #expect(proxy.requests.allSatisfy { $0.status == 200 && $0.method != "CONNECT" })
            #expect(proxy.requests.allSatisfy { $0.proxyAuthorization == "Basic " + Data("bob:p@ss".utf8).base64EncodedString() })
            // The origin sees its own Host and never the proxy's credentials.
            #expect(server.state.requests.count == 7)
            #expect(server.state.requests.allSatisfy { $0.header("Host") == "127.0.0.1:\(server.port)" && $0.header("Proxy-Authorization") == nil })
        } catch { failure = error }
        try await session.shutdown()
        try await proxy.shutdown()
        try await server.shutdown()
        if let failure { throw failure }
    }

    @Test func aForwardingProxysRefusalIsProxyAuth() async throws {
        let server = try await TestServer.start()
        let proxy = try await TestProxy.start(.requiresCredentials(username: "bob", password: "right"))
        let session = Session(configuration: Session.Configuration(proxies: try ProxyResolver(environment: ["http_proxy": proxy.url])))
        let error = await #expect(throws: FetchError.self) {
            _ = try await session.data(server.baseURL + "/echo", options: RequestOptions(retryPolicy: .fast(limit: 2)))
        }
        #expect(error?.code == .proxyAuth)
        #expect(error?.message == "the proxy http://127.0.0.1:\(proxy.port) answered 407: it asks for credentials (give them in the proxy URL)")
        #expect(error?.attempts == 1, "not retried")
        let again = await #expect(throws: FetchError.self) { _ = try await session.data(server.baseURL + "/echo?again=1") }
        #expect(again?.code == .proxyAuth)
        #expect(proxy.requests.map(\.status) == [407], "the proxy was asked once")
        #expect(server.state.requests.isEmpty)
        try await session.shutdown()
        try await proxy.shutdown()
        try await server.shutdown()
    }
}
