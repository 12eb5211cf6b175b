import Foundation
import NIOHTTP1
#if canImport(Glibc)
import Glibc
#endif

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

    static func write(_ head: TransportResponseHead, to path: String, redactor: Redactor) throws {
        let temporary = FileSink.save(to: path).temporaryPath
        let data = Data(render(head, redactor: redactor).utf8)
        do {
            if !FileManager.default.createFile(atPath: temporary, contents: data) {
                try FileIO.createDirectory(containing: temporary)
                guard FileManager.default.createFile(atPath: temporary, contents: data) else {
                    throw FetchError(.io, "cannot write '\(temporary)'")
                }
            }
            guard rename(temporary, path) == 0 else { throw FileIO.error(errno, "cannot move the headers into place at '\(path)'") }
        } catch {
            unlink(temporary)
            throw error
        }
    }
}
