import Foundation
import NIOCore
import NIOHTTP1

/// `save_headers:` the status line and the response headers as the job received them, in the
/// format of `curl -D` (CRLF line ends, a blank line at the end). A response from the cache gives
/// its stored headers with the `Age` it has now. Credential headers (`Set-Cookie`, …) and secret
/// values are written as `<redacted>`, as everywhere fetchctl writes. Written beside the destination and renamed into
/// place, like `save`.
enum ResponseHeadersFile {
    static func render(_ head: TransportResponseHead, redactor: Redactor) -> String {
        var text = "HTTP/1.1 \(head.status) \(HTTPResponseStatus(statusCode: head.status).reasonPhrase)\r\n"
        for header in head.headers { text += "\(header.name): \(redactor.headerValue(name: header.name, value: header.value))\r\n" }
        return text + "\r\n"
    }

    /// Through a `FileSink`, so the headers file is saved as atomically as the body.
    static func write(_ head: TransportResponseHead, to path: String, redactor: Redactor) async throws {
        let sink = FileSink.save(to: path)
        do {
            try sink.open(head)
            try sink.write(ByteBuffer(string: render(head, redactor: redactor)))
            try await sink.finish()
        } catch {
            await sink.abandon()
            throw error
        }
    }
}
