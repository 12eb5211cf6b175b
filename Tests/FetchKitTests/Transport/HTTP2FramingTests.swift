import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import Testing
@testable import FetchKit

/// How FetchKit's own client writes a request as HTTP/2 frames and reads a response from them.
@Suite struct HTTP2FramingTests {
    @Test func aRequestBecomesOneHeadersFrameAndItsBody() throws {
        var fields = NIOHTTP1.HTTPHeaders()
        for (name, value) in [("Host", "example.org:8443"), ("User-Agent", "fetchctl"), ("Connection", "keep-alive"), ("TE", "gzip"),
                              ("te", "trailers"), ("Transfer-Encoding", "chunked"), ("X-Trace", "Abc")] {
            fields.add(name: name, value: value)
        }
        let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/a/b?c=1", headers: fields)
        let parts = HTTP2Framing.request(head, body: ByteBuffer(string: "{}"))
        guard case .headers(let headers) = parts.headers, case .data(let data)? = parts.data else {
            Issue.record("expected HEADERS then DATA, got \(parts)")
            return
        }
        #expect(!headers.endStream && data.endStream)
        let written = headers.headers.map { ($0.name, $0.value) }
        #expect(written.map(\.0) == [":method", ":scheme", ":authority", ":path", "user-agent", "te", "x-trace"])
        #expect(written.map(\.1) == ["POST", "https", "example.org:8443", "/a/b?c=1", "fetchctl", "trailers", "Abc"])
        #expect(headers.headers.map(\.indexable)[3] == .nonIndexable, ":path is not indexed")
        guard case .byteBuffer(let body) = data.data else { Issue.record("a body in memory"); return }
        #expect(String(buffer: body) == "{}")
        // Without a body the HEADERS frame ends the stream.
        let bare = HTTP2Framing.request(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: ["Host": "h"]), body: nil)
        guard case .headers(let only) = bare.headers, bare.data == nil else { Issue.record("\(bare)"); return }
        #expect(only.endStream)
    }

    @Test func aResponseIsReadFromItsFrames() throws {
        let interim = try HTTP2Framing.response(.headers(.init(headers: [":status": "103", "link": "</s.css>"])), sawHead: false)
        #expect(interim.head == nil && !interim.end, "an interim head is skipped")
        let final = try HTTP2Framing.response(.headers(.init(headers: [":status": "200", "content-length": "5", "etag": "\"v1\""])), sawHead: false)
        let head = try #require(final.head)
        #expect(head.status == 200 && head.expectedLength == 5 && head.httpVersion == "2")
        #expect(head.headers.map(\.name) == ["content-length", "etag"], "no pseudo-header among the fields")
        #expect(!final.end)
        let body = try HTTP2Framing.response(.data(.init(data: .byteBuffer(ByteBuffer(string: "hello")))), sawHead: true)
        #expect(body.body.map { String(buffer: $0) } == "hello" && !body.end)
        let trailers = try HTTP2Framing.response(.headers(.init(headers: ["x-checksum": "1"], endStream: true)), sawHead: true)
        #expect(trailers.head == nil && trailers.end, "trailers end the response")
        let headOnly = try HTTP2Framing.response(.headers(.init(headers: [":status": "204"], endStream: true)), sawHead: false)
        #expect(headOnly.head?.status == 204 && headOnly.end)
        #expect(throws: HTTP2MalformedResponse.self) { try HTTP2Framing.response(.headers(.init(headers: ["etag": "x"])), sawHead: false) }
        #expect(throws: HTTP2StreamReset.self) { try HTTP2Framing.response(.rstStream(.cancel), sawHead: true) }
        #expect(HTTP2Connection.wasRefused(HTTP2StreamReset(code: .refusedStream)))
        #expect(!HTTP2Connection.wasRefused(HTTP2StreamReset(code: .cancel)))
    }
}
