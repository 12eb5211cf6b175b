import NIOCore
import NIOHTTP1

/// How the server answers one request: status, headers, body, and the misbehaviour a test asked for.
struct Reply {
    enum Body {
        case bytes([UInt8])
        /// `/bytes` content: `range` of the generated file with `seed`, written in blocks.
        case generated(range: Range<Int>, seed: Int)
        /// A registered file's bytes in `range`.
        case slice([UInt8], Range<Int>)

        var count: Int {
            switch self {
            case .bytes(let b): return b.count
            case .generated(let range, _): return range.count
            case .slice(_, let range): return range.count
            }
        }
    }

    var status: HTTPResponseStatus
    var headers: [(String, String)] = []
    var body: Body = .bytes([])
    /// Wait this long before the response head.
    var delay: TimeAmount = .zero
    /// Close the connection after this many body bytes (a truncated transfer).
    var dropAfter: Int?
    /// Pause for `stallFor` after this many body bytes.
    var stallAfter: Int?
    var stallFor: TimeAmount = .zero
    /// Send a Content-Length (false only for deliberately broken answers).
    var sendsContentLength = true
    /// Gzip or deflate the body when the request's `Accept-Encoding` allows (`compress=1`).
    var compressible = false

    init(status: HTTPResponseStatus, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = .bytes(body)
    }

    static func text(_ status: HTTPResponseStatus, _ text: String, headers: [(String, String)] = []) -> Reply {
        Reply(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + headers, body: Array(text.utf8))
    }

    static func json(_ status: HTTPResponseStatus = .ok, _ text: String, headers: [(String, String)] = []) -> Reply {
        Reply(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(text.utf8))
    }
}

/// A request as the routes see it.
struct ServerRequest {
    var method: HTTPMethod
    var uri: String
    var path: String
    var query: [String: String]
    var headers: HTTPHeaders
    var body: [UInt8]

    func int(_ name: String) -> Int? { query[name].flatMap { Int($0) } }
}
