import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// Validation (status, content type against Accept, max size) and redirects (limit, no_follow,
/// credentials never sent to another origin) against the local server.
@Suite struct ValidationAndRedirectTests {
    func get(_ server: TestServer, _ path: String, headers: [(String, String)] = []) -> BuiltRequest {
        BuiltRequest(method: .get, url: URL(string: server.baseURL + path)!, headers: HTTPHeaders(headers))
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aStatusOutsideTheSetFailsAndTheBodyIsNotKept(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let sink = DataSink()
            let error = await #expect(throws: FetchError.self) {
                try await session.execute(url(server, "/status/201"), options: RequestOptions(validator: ResponseValidator(statuses: StatusSet([200...200]))), sink: sink)
            }
            #expect(error?.code == .status)
            #expect(error?.message == "HTTP 201 is not in 200")
            #expect(sink.data.isEmpty)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases, [
        ("application/json", true), ("application/*", true), ("*/*", true), ("text/html, application/json;q=0.9", true),
        ("text/*", false), ("image/png", false),
    ])
    func contentTypeMatchesAcceptWithWildcards(client: Session.HTTPClientKind, example: (accept: String, passes: Bool)) async throws {
        let (accept, passes) = example
        try await withSession(client: client) { server, session in
            let options = RequestOptions(validator: ResponseValidator(contentType: .accept), retryPolicy: nil)
            let result = await Result(catching: { try await session.data(get(server, "/echo", headers: [("Accept", accept)]), options: options) })
            if passes {
                #expect((try? result.get()) != nil)
            } else {
                #expect(throws: FetchError.self) { try result.get() }
                if case .failure(let error as FetchError) = result {
                    #expect(error.code == .validation)
                    #expect(error.message.hasPrefix("the Content-Type 'application/json' is not one of"))
                }
            }
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func contentTypeMatchesAGivenList(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let ok = RequestOptions(validator: ResponseValidator(contentType: .list(["text/plain", "application/json"])))
            let response = try await session.data(url(server, "/echo"), options: ok)
            #expect(response.response.status == 200)
            let bad = RequestOptions(validator: ResponseValidator(contentType: .list(["text/csv"])))
            await #expect(throws: FetchError.self) { try await session.data(url(server, "/echo"), options: bad) }
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func aBodyLargerThanMaxSizeFails(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let options = RequestOptions(validator: ResponseValidator(maxSize: 1000))
            let error = await #expect(throws: FetchError.self) { try await session.data(url(server, "/bytes/5000"), options: options) }
            #expect(error?.code == .validation)
            #expect(error?.message == "the body of 5000 bytes exceeds validate.max_size (1000 bytes)")
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func followsRedirectsToTheEnd(client: Session.HTTPClientKind) async throws {
        let recorder = EventRecorder()
        try await withSession(client: client, monitors: [recorder]) { server, session in
            let response = try await session.data(url(server, "/redirect/3"))
            #expect(response.response.status == 200)
            #expect(response.response.request.url.path == "/redirect/0")
            #expect(server.state.requests.map(\.path) == ["/redirect/3", "/redirect/2", "/redirect/1", "/redirect/0"])
            #expect(recorder.events("request.finished").map(\.detail) == ["302", "302", "302", "200"])
            #expect(response.response.attempts == 1)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func stopsPastTheRedirectLimit(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let error = await #expect(throws: FetchError.self) {
                try await session.data(url(server, "/redirect/5"), options: RequestOptions(redirector: Redirector(RedirectOptions(max: 2))))
            }
            #expect(error?.code == .redirect)
            #expect(error?.message == "more than 2 redirects")
            #expect(server.state.requests.count == 3)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func noFollowReturnsTheRedirectItself(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            let failing = await #expect(throws: FetchError.self) {
                try await session.data(url(server, "/redirect/1"), options: RequestOptions(redirector: .doNotFollow))
            }
            #expect(failing?.status == 302)
            let accepted = RequestOptions(validator: ResponseValidator(statuses: StatusSet([300...399])), redirector: .doNotFollow)
            let response = try await session.data(url(server, "/redirect/1"), options: accepted)
            #expect(response.response.status == 302)
            #expect(response.response.head.headers["Location"] == "/redirect/0")
            #expect(server.state.requests.count == 2)
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func credentialsAreNeverSentToAnotherHost(client: Session.HTTPClientKind) async throws {
        let other = try await TestServer.start()
        defer { Task { try? await other.shutdown() } }
        try await withSession(client: client) { server, session in
            let target = "\(other.baseURL)/echo".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let request = get(server, "/redirect-to?url=\(target)", headers: [
                ("Authorization", "Bearer secret-1"), ("Cookie", "session=abc"), ("Proxy-Authorization", "Basic eHg="),
                ("X-Api-Key", "k-123"), ("X-Trace", "keep"),
            ])
            let options = RequestOptions(redirector: Redirector(RedirectOptions(), credentialHeaders: ["X-Api-Key"]))
            _ = try await session.data(request, options: options)
            let first = try #require(server.state.requests.first)
            #expect(first.header("Authorization") == "Bearer secret-1")
            let hop = try #require(other.state.requests.first)
            for name in ["Authorization", "Cookie", "Proxy-Authorization", "X-Api-Key"] { #expect(hop.header(name) == nil, "\(name) crossed hosts") }
            #expect(hop.header("X-Trace") == "keep")
        }
        try await other.shutdown()
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func credentialsStayOnTheSameHost(client: Session.HTTPClientKind) async throws {
        try await withSession(client: client) { server, session in
            _ = try await session.data(get(server, "/redirect/1", headers: [("Authorization", "Bearer same")]))
            #expect(server.state.requests.map { $0.header("Authorization") } == ["Bearer same", "Bearer same"])
        }
    }

    @Test(arguments: Session.HTTPClientKind.allCases)
    func crossHostFalseRefusesAnotherHost(client: Session.HTTPClientKind) async throws {
        let other = try await TestServer.start()
        try await withSession(client: client) { server, session in
            let target = "\(other.baseURL)/echo".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let error = await #expect(throws: FetchError.self) {
                try await session.data(url(server, "/redirect-to?url=\(target)"), options: RequestOptions(redirector: Redirector(RedirectOptions(crossHost: false))))
            }
            #expect(error?.code == .redirect)
            #expect(other.state.requests.isEmpty)
        }
        try await other.shutdown()
    }

    @Test(arguments: Session.HTTPClientKind.allCases, [(303, "GET", 0), (302, "GET", 0), (307, "POST", 4), (308, "POST", 4)])
    func redirectsAfterPostChangeOrKeepTheMethod(client: Session.HTTPClientKind, example: (status: Int, method: String, bodyBytes: Int)) async throws {
        let (status, method, bodyBytes) = example
        try await withSession(client: client) { server, session in
            let request = BuiltRequest(method: .post, url: URL(string: url(server, "/redirect-to?status=\(status)&url=/echo"))!,
                                       headers: HTTPHeaders([("Content-Type", "text/plain")]), body: .data(Data("body".utf8)))
            _ = try await session.data(request)
            let hop = try #require(server.state.requests.last)
            #expect(hop.method == method)
            #expect(hop.bodyBytes == bodyBytes)
        }
    }
}

extension Result where Failure == Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
