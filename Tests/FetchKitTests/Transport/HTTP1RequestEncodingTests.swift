import Foundation
import FetchKitTesting
import NIOCore
import Testing
@testable import FetchKit

/// `HTTP1RequestEncoding`: the bytes FetchKit's own client writes for an HTTP/1.1 request, with the
/// framing and the checks NIO's encoder and header validator applied before, and the same requests
/// against the local server.
@Suite struct HTTP1RequestEncodingTests {
    func encoded(_ method: FetchKit.HTTPMethod, _ url: String = "http://127.0.0.1:8080/x?y=1", headers: [(String, String)] = [],
                 body: RequestBody = .none) throws -> String {
        let request = BuiltRequest(method: method, url: URL(string: url)!, headers: HTTPHeaders(headers), body: body)
        let target = try #require(NIOTransport.target(of: request))
        let buffer = try HTTP1RequestEncoding.encode(request, target: target, url: url)
        return String(decoding: buffer.readableBytesView, as: UTF8.self)
    }

    /// Every byte value against the grammars as RFC 9110 §5.6.2 (`tchar`) and RFC 9112 §3.2 (the
    /// request-target's characters) write them, one by one.
    @Test func theTokenAndTargetTablesHoldExactlyTheirGrammarsBytes() {
        let letters = Set(UInt8(ascii: "a")...UInt8(ascii: "z")).union(UInt8(ascii: "A")...UInt8(ascii: "Z")).union(UInt8(ascii: "0")...UInt8(ascii: "9"))
        let tchar = letters.union("!#$%&'*+-.^_`|~".utf8)
        let target = letters.union("-._~:/?#[]@!$&'()*+,;=%".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(HTTP1RequestEncoding.tokenBytes[Int(byte)] == tchar.contains(byte), "tchar \(byte)")
            let text = String(decoding: [byte], as: UTF8.self)
            if byte < 0x80 { #expect(HTTP1RequestEncoding.isRequestTarget(text) == target.contains(byte), "target \(byte)") }
        }
        #expect(HTTP1RequestEncoding.tokenBytes.count == 256)
        #expect(!HTTP1RequestEncoding.isRequestTarget("/a b"))
        #expect(HTTP1RequestEncoding.isRequestTarget("/a%20b?c=d&e=[1]"))
    }

    @Test func aGetNamesItsHostAfterItsOwnFieldsAndHasNoLength() throws {
        #expect(try encoded(.get, headers: [("Accept", "*/*"), ("X-A", "1")])
            == "GET /x?y=1 HTTP/1.1\r\nAccept: */*\r\nX-A: 1\r\nHost: 127.0.0.1:8080\r\n\r\n")
        // The request's own Host stands, and port 80 is left out of the one added.
        #expect(try encoded(.get, headers: [("host", "example.org")]) == "GET /x?y=1 HTTP/1.1\r\nhost: example.org\r\n\r\n")
        #expect(try encoded(.head, "http://example.org/") == "HEAD / HTTP/1.1\r\nHost: example.org\r\n\r\n")
    }

    @Test func aBodyIsFramedByItsLengthAndFollowsTheHead() throws {
        #expect(try encoded(.post, headers: [("X-A", "1")], body: .data(Data("abc".utf8)))
            == "POST /x?y=1 HTTP/1.1\r\nX-A: 1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 3\r\n\r\nabc")
        // A POST, PUT or PATCH without a body says so; a GET without one says nothing.
        #expect(try encoded(.put).hasSuffix("Content-Length: 0\r\n\r\n"))
        #expect(try encoded(.patch).hasSuffix("Content-Length: 0\r\n\r\n"))
        #expect(try !encoded(.delete).contains("Content-Length"))
        // The request's own length stands, and a Transfer-Encoding beside a length is not sent.
        #expect(try encoded(.post, headers: [("Content-Length", "3"), ("Transfer-Encoding", "chunked")], body: .data(Data("abc".utf8)))
            == "POST /x?y=1 HTTP/1.1\r\nContent-Length: 3\r\nHost: 127.0.0.1:8080\r\n\r\nabc")
    }

    @Test func framingFieldsAreDroppedOrHonouredAsNIOsEncoderDid() throws {
        // TRACE carries no body: neither framing field is sent, not even the request's own.
        #expect(try encoded(.trace, headers: [("Content-Length", "5"), ("Transfer-Encoding", "chunked"), ("X-A", "1")])
            == "TRACE /x?y=1 HTTP/1.1\r\nX-A: 1\r\nHost: 127.0.0.1:8080\r\n\r\n")
        // A GET that says it is chunked ends with the empty last chunk; any other coding goes as it is.
        #expect(try encoded(.get, headers: [("Transfer-Encoding", "chunked")])
            == "GET /x?y=1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: 127.0.0.1:8080\r\n\r\n0\r\n\r\n")
        #expect(try encoded(.get, headers: [("Transfer-Encoding", "gzip")]).hasSuffix("Transfer-Encoding: gzip\r\nHost: 127.0.0.1:8080\r\n\r\n"))
    }

    @Test func aRequestHTTPCannotCarryFailsAsInvalidNamingWhatIsWrong() throws {
        let injected = #expect(throws: FetchError.self) { try encoded(.get, headers: [("X-Token", "a\r\nX-Injected: 1")]) }
        #expect(injected?.code == .invalidRequest)
        #expect(injected?.message.contains("'X-Token'") == true)
        #expect(injected?.url == "http://127.0.0.1:8080/x?y=1")
        let name = #expect(throws: FetchError.self) { try encoded(.get, headers: [("X Token", "a")]) }
        #expect(name?.code == .invalidRequest)
        #expect(name?.message.contains("'X Token'") == true)
        for value in ["a\u{0}b", "a\u{7F}", "a\nb", "\u{1B}[31m"] {
            #expect(throws: FetchError.self) { try encoded(.get, headers: [("X", value)]) }
        }
        // A tab and bytes above ASCII are allowed in a value, as RFC 9110 says.
        #expect(try encoded(.get, headers: [("X", "a\tb é")]).contains("X: a\tb é\r\n"))
        #expect(!HTTP1RequestEncoding.isRequestTarget("/a b"))
        #expect(!HTTP1RequestEncoding.isRequestTarget("/a\"b"))
        #expect(HTTP1RequestEncoding.isRequestTarget("/a/b%2Fc?q=1&r=[x]:@!$'()*+,;=-._~"))
    }

    /// Against the server: the header that would split the request is never sent, and the
    /// connection stays usable; a HEAD's response (a length, no body) ends at its head, so the next
    /// request on the same connection reads its own response.
    @Test func theServerSeesNoInjectedRequestAndAHeadLeavesTheConnectionInStep() async throws {
        let server = try await TestServer.start()
        let transport = NIOTransport(perHost: 1)
        let tests = TransportTests()
        let failure = await #expect(throws: FetchError.self) {
            _ = try await tests.fetch(transport, server.baseURL + "/echo", headers: [("X-A", "1\r\nX-Injected: 1")])
        }
        #expect(failure?.code == .invalidRequest)
        let head = try await tests.fetch(transport, server.baseURL + "/bytes/1000", method: .head)
        #expect(head.head?.status == 200)
        #expect(head.head?.expectedLength == 1000)
        #expect(head.bytes.isEmpty)
        let get = try await tests.fetch(transport, server.baseURL + "/bytes/1000")
        #expect(get.bytes.count == 1000)
        let posted = try await transport.sendCollecting(BuiltRequest(method: .post, url: URL(string: server.baseURL + "/echo")!,
                                                                     headers: HTTPHeaders([("X-A", "1")]), body: .data(Data("hello".utf8))))
        #expect(posted.contains("hello"))
        try await transport.shutdown()
        try await server.shutdown()
        #expect(server.state.requests.map(\.method) == ["HEAD", "GET", "POST"])
        #expect(server.state.requests.allSatisfy { $0.header("X-Injected") == nil })
        #expect(server.state.requests.last?.header("Content-Length") == "5")
        #expect(server.state.connectionsAccepted == 1)
    }
}

extension HTTPTransport {
    /// The body of `request`'s response, as text.
    func sendCollecting(_ request: BuiltRequest) async throws -> String {
        let bytes = LockedBox([UInt8]())
        try await send(request, timeouts: .defaults, onHead: { _ in }, onChunk: { chunk in bytes.withLock { $0 += chunk.readableBytesView } })
        return String(decoding: bytes.withLock { $0 }, as: UTF8.self)
    }
}
