import Foundation
import NIOCore
import Testing
@testable import FetchKit

/// `HTTP1ResponseParser`: RFC 9112's framing, read the same however the bytes are split between
/// reads (every split point of each response is tried), and the responses it refuses.
@Suite struct HTTP1ResponseParserTests {
    /// What the parser made of a response.
    struct Read: Equatable {
        var status: Int?
        var headers: [String] = []
        var expectedLength: Int64?
        var version: String?
        var body: [UInt8] = []
        var ended = false
        var keepAlive = true
        /// Heads seen (an interim response must not be one).
        var heads = 0
    }

    /// Feeds `text` in pieces cut at `cuts`, then the close if `closes`.
    func read(_ text: String, head: Bool = false, cuts: [Int] = [], closes: Bool = false) throws -> Read {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(toHead: head)
        let bytes = Array(text.utf8)
        var result = Read()
        func take(_ parts: ResponseParts) {
            if let head = parts.head {
                result.heads += 1
                result.status = head.status
                result.headers = head.headers.map { "\($0.name)=\($0.value)" }
                result.expectedLength = head.expectedLength
                result.version = head.httpVersion
                result.keepAlive = parts.keepAlive
            }
            if !parts.keepAlive { result.keepAlive = false }
            if let body = parts.body { result.body += body.readableBytesView }
            if parts.end { result.ended = true }
        }
        var start = 0
        for cut in cuts.sorted() + [bytes.count] where cut >= start {
            var buffer = ByteBuffer(bytes: bytes[start..<cut])
            take(try parser.read(&buffer))
            #expect(buffer.readableBytes == 0)
            start = cut
        }
        if closes, let end = parser.closed() { take(end) }
        return result
    }

    /// The same response read whole, then split in two at every byte, then byte by byte.
    func readEveryWay(_ text: String, head: Bool = false, closes: Bool = false) throws -> Read {
        let whole = try read(text, head: head, closes: closes)
        for cut in 0...text.utf8.count {
            #expect(try read(text, head: head, cuts: [cut], closes: closes) == whole, "cut at \(cut)")
        }
        #expect(try read(text, head: head, cuts: Array(0...text.utf8.count), closes: closes) == whole, "byte by byte")
        return whole
    }

    @Test func aResponseWithALengthEndsWithItsLastByte() throws {
        let read = try readEveryWay("HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\nETag:  \"x\" \t\r\n\r\nhello")
        #expect(read == Read(status: 200, headers: ["Server=nginx", "Content-Length=5", "ETag=\"x\""], expectedLength: 5, version: "1.1",
                             body: Array("hello".utf8), ended: true, keepAlive: true, heads: 1))
        // No reason phrase, a length of zero.
        let empty = try readEveryWay("HTTP/1.1 200\r\ncontent-length: 0\r\n\r\n")
        #expect(empty.ended && empty.body.isEmpty && empty.keepAlive)
    }

    @Test func aChunkedBodyIsJoinedAndItsExtensionsAndTrailersAreReadPast() throws {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;name=value\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n\r\n"
        let read = try readEveryWay(text)
        #expect(read.body == Array("helloabcdefghijklmnopqrstuvwxyz".utf8))
        #expect(read.ended && read.keepAlive && read.expectedLength == nil)
        let bare = try readEveryWay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        #expect(bare.body == Array("abc".utf8) && bare.ended)
    }

    @Test func aBodyWithoutALengthRunsUntilTheCloseAndEndsTheConnection() throws {
        let closed = try readEveryWay("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end", closes: true)
        #expect(closed.body == Array("until the end".utf8))
        #expect(closed.ended && !closed.keepAlive)
        // Not before the close.
        #expect(try !read("HTTP/1.1 200 OK\r\n\r\nabc").ended)
        // A coding other than chunked last: also until the close, whatever the length says.
        let coded = try readEveryWay("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nabcdef", closes: true)
        #expect(coded.body == Array("abcdef".utf8) && !coded.keepAlive)
    }

    @Test func responsesWithoutABodyEndAtTheirHead() throws {
        let head = try readEveryWay("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", head: true)
        #expect(head.ended && head.body.isEmpty && head.expectedLength == 1000 && head.keepAlive)
        for status in [204, 304] {
            let read = try readEveryWay("HTTP/1.1 \(status) X\r\nContent-Length: 10\r\n\r\n")
            #expect(read.status == status && read.ended && read.body.isEmpty)
        }
        // An interim response is skipped: the final one is the head.
        let interim = try readEveryWay("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
        #expect(interim.heads == 1 && interim.status == 201 && interim.body == Array("ok".utf8) && interim.headers == ["Content-Length=2"])
    }

    @Test func theConnectionIsKeptOnlyWhenTheResponseAllows() throws {
        #expect(try !read("HTTP/1.1 200 OK\r\nConnection: Keep-Alive, close\r\nContent-Length: 0\r\n\r\n").keepAlive)
        let old = try read("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(!old.keepAlive && old.version == "1.0")
        #expect(try read("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").keepAlive)
        // Both framings: chunked wins, and the connection goes (RFC 9112 §6.3).
        let both = try readEveryWay("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
        #expect(both.body == Array("ok".utf8) && both.ended && !both.keepAlive)
        // Bytes after the end, which no request asked for.
        let extra = try read("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n")
        #expect(extra.ended && extra.body == Array("ok".utf8) && !extra.keepAlive)
    }

    @Test func oneConnectionReadsOneResponseAfterAnother() throws {
        var parser = HTTP1ResponseParser()
        for body in ["first", "second"] {
            parser.expectResponse(toHead: false)
            var buffer = ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let parts = try parser.read(&buffer)
            #expect(parts.head?.status == 200 && parts.end && parts.keepAlive)
            #expect(parts.body.map { String(buffer: $0) } == body)
        }
    }

    @Test(arguments: [
        ("HTTP/2 200 OK\r\n\r\n", "not HTTP/1.x"),
        ("HTTP/1.1 2000 OK\r\n\r\n", "malformed"),
        ("HTTP/1.1 20x OK\r\n\r\n", "three digits"),
        ("HTTP/1.1 101 Switching Protocols\r\n\r\n", "101"),
        ("HTTP/1.1 200 OK\r\nA: 1\r\n folded\r\n\r\n", "folded"),
        ("HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n", "not a token"),
        ("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", "no field name"),
        ("HTTP/1.1 200 OK\r\nA: 1\u{1}2\r\n\r\n", "control character"),
        ("HTTP/1.1 200 OK\r\nA: 1\nB: 2\r\n\r\n", "control character"),
        ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "not a number"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "two different"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\n", "two different"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "hexadecimal"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n", "CRLF"),
    ])
    func aResponseThatIsNotValidHTTP1IsRefused(text: String, reason: String) throws {
        let failure = #expect(throws: HTTP1ResponseParser.Failure.self) { try read(text) }
        #expect(failure?.description.contains(reason) == true, "\(failure?.description ?? "")")
    }

    @Test func aHeadLargerThanNIOsLimitIsRefusedBeforeItEnds() throws {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(toHead: false)
        var buffer = ByteBuffer(string: "HTTP/1.1 200 OK\r\n" + String(repeating: "X-Filler: 0123456789abcdef\r\n", count: 3_000))
        #expect(throws: HTTP1ResponseParser.Failure.self) { try parser.read(&buffer) }
        // A list of one length repeated is allowed (RFC 9110 §8.6).
        #expect(try read("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok").body == Array("ok".utf8))
    }
}
