import Foundation
import NIOCore
import NIOHTTP1

/// The server's endpoints. Query parameters common to byte endpoints: `drop_after=N` closes the
/// connection after N body bytes, `stall_after=N&stall_ms=M` pauses there; with `key=K&times=T` the
/// misbehaviour applies only to the first T requests for K, so a retry can succeed. On any
/// endpoint, `drop_next=1` closes the connection when its next request arrives, unanswered, and
/// `goaway=1` on an HTTP/2 stream sends GOAWAY once the response is sent (the connection closes two
/// seconds later).
enum TestServerRoutes {
    static func reply(to request: ServerRequest, state: TestServerState) -> Reply {
        let parts = request.path.split(separator: "/").map(String.init)
        switch (parts.first ?? "", parts.count) {
        case ("bytes", 2):
            guard let size = Int(parts[1]), size >= 0 else { return .text(.badRequest, "bad size") }
            let seed = request.int("seed") ?? 0
            let etag = "\"\(request.query["version"] ?? "v1")-\(size)-\(seed)\""
            return ranged(request, state: state, size: size, etag: etag) { .generated(range: $0, seed: seed) }
        case ("files", 2):
            guard let bytes = state.file(parts[1]) else { return .text(.notFound, "no such file") }
            let etag = "\"\(bytes.count)-\(fnv1a(bytes))\""
            return ranged(request, state: state, size: bytes.count, etag: etag) { .slice(bytes, $0) }
        case ("echo", _):
            return echo(request)
        case ("status", 2):
            let code = Int(parts[1]) ?? 500
            // 1xx, 204 and 304 have no body (RFC 9110 §6.4.1).
            if code == 204 || code == 304 || code < 200 { return Reply(status: HTTPResponseStatus(statusCode: code)) }
            return .text(HTTPResponseStatus(statusCode: code), "status \(code)\n")
        case ("delay", 2):
            var reply = Reply.text(.ok, "delayed\n")
            reply.delay = .milliseconds(Int64(parts[1]) ?? 0)
            return reply
        case ("flaky", 2):
            return flaky(request, key: parts[1], state: state)
        case ("redirect", 2):
            let n = Int(parts[1]) ?? 0
            if n <= 0 { return echo(request) }
            let status = HTTPResponseStatus(statusCode: request.int("status") ?? 302)
            return Reply(status: status, headers: [("Location", "/redirect/\(n - 1)")])
        case ("redirect-to", _):
            let status = HTTPResponseStatus(statusCode: request.int("status") ?? 302)
            return Reply(status: status, headers: [("Location", request.query["url"] ?? "/")])
        case ("bearer", _):
            let expected = "Bearer \(request.query["token"] ?? "secret-token")"
            guard request.headers["Authorization"].first == expected else {
                return .text(.unauthorized, "unauthorized\n", headers: [("WWW-Authenticate", "Bearer")])
            }
            return .json(.ok, #"{"authorized":true}"#)
        case ("oauth", 2) where parts[1] == "token":
            return token(request, state: state)
        case ("gh", _):
            return gitHub(request, parts: Array(parts.dropFirst()), state: state)
        case ("pages", 2):
            return pages(request, style: parts[1], state: state)
        case ("cache", 1):
            return cacheable(request, key: "default", state: state)
        case ("cache", 2):
            return cacheable(request, key: parts[1], state: state)
        default:
            return .text(.notFound, "not found: \(request.path)\n")
        }
    }

    // MARK: - Byte endpoints with validators and ranges

    static let lastModified = "Sat, 21 Nov 2026 12:00:00 GMT"

    /// `validators=weak` makes the entity tag weak, `validators=last_modified` sends only
    /// `Last-Modified`, `validators=none` neither. Every answer has a `Date` (now).
    static func ranged(_ request: ServerRequest, state: TestServerState, size: Int, etag strongTag: String,
                       body: (Range<Int>) -> Reply.Body) -> Reply {
        let validators = request.query["validators"] ?? "both"
        let etag: String? = switch validators {
        case "weak": "W/" + strongTag
        case "last_modified", "none": nil
        default: strongTag
        }
        let lastModified: String? = validators == "none" ? nil : Self.lastModified
        var validatorHeaders: [(String, String)] = [("Date", httpDate(Date()))]
        if let etag { validatorHeaders.append(("ETag", etag)) }
        if let lastModified { validatorHeaders.append(("Last-Modified", lastModified)) }
        var headers = validatorHeaders + [("Accept-Ranges", "bytes"), ("Content-Type", "application/octet-stream")]
        // If-None-Match compares weakly (RFC 9110 §13.1.2).
        if let match = request.headers["If-None-Match"].first, let etag,
           match == "*" || match.replacingOccurrences(of: "W/", with: "") == etag.replacingOccurrences(of: "W/", with: "") {
            return Reply(status: .notModified, headers: validatorHeaders)
        }
        var range: Range<Int> = 0..<size
        var status = HTTPResponseStatus.ok
        let ignoreRange = request.query["ignore_range"] == "1"
        if !ignoreRange, let header = request.headers["Range"].first {
            // If-Range compares strongly (§13.1.5): a weak tag never matches.
            let ifRange = request.headers["If-Range"].first
            let validatorMatches = ifRange == nil || (ifRange == etag && !(ifRange?.hasPrefix("W/") ?? false))
                || (ifRange != nil && ifRange == lastModified)
            if validatorMatches, let (start, end) = parseRange(header, size: size) {
                guard start < size else {
                    return Reply(status: .rangeNotSatisfiable, headers: [("Content-Range", "bytes */\(size)")] + validatorHeaders)
                }
                range = start..<min(end + 1, size)
                status = .partialContent
                headers.append(("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"))
            }
        }
        var reply = Reply(status: status, headers: headers)
        reply.body = body(range)
        applyMisbehaviour(request, state: state, to: &reply)
        return reply
    }

    /// `bytes=N-` or `bytes=N-M` (one range only).
    static func parseRange(_ header: String, size: Int) -> (Int, Int)? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2, let start = Int(spec[0]) else { return nil }
        let end = spec[1].isEmpty ? Int.max - 1 : (Int(spec[1]) ?? Int.max - 1)
        return end >= start ? (start, end) : nil
    }

    static func applyMisbehaviour(_ request: ServerRequest, state: TestServerState, to reply: inout Reply) {
        if let key = request.query["key"], let times = request.int("times") {
            guard state.hit("misbehave:\(key)") <= times else { return }
        }
        if let drop = request.int("drop_after") { reply.dropAfter = drop }
        if let stall = request.int("stall_after") {
            reply.stallAfter = stall
            reply.stallFor = .milliseconds(Int64(request.int("stall_ms") ?? 5000))
        }
    }

    // MARK: - Other endpoints

    static func echo(_ request: ServerRequest) -> Reply {
        let headers = request.headers.map { "[\(jsonString($0.name)), \(jsonString($0.value))]" }.joined(separator: ", ")
        let bodyText = String(bytes: request.body, encoding: .utf8) ?? Data(request.body).base64EncodedString()
        let query = request.uri.firstIndex(of: "?").map { String(request.uri[request.uri.index(after: $0)...]) } ?? ""
        let json = """
            {"method": \(jsonString(request.method.rawValue)), "path": \(jsonString(request.path)), \
            "query": \(jsonString(query)), "headers": [\(headers)], "body": \(jsonString(bodyText))}
            """
        return .json(.ok, json)
    }

    /// Fails the first `fail` requests for `key` with `status` (and `Retry-After` when asked), then 200.
    static func flaky(_ request: ServerRequest, key: String, state: TestServerState) -> Reply {
        let count = state.hit("flaky:\(key)")
        let failures = request.int("fail") ?? 1
        guard count <= failures else { return .json(.ok, #"{"key":\#(jsonString(key)),"attempt":\#(count)}"#) }
        var headers: [(String, String)] = []
        if let seconds = request.query["retry_after"] {
            headers.append(("Retry-After", seconds))
        } else if let delta = request.int("retry_after_date") {
            headers.append(("Retry-After", httpDate(Date().addingTimeInterval(TimeInterval(delta)))))
        }
        return .text(HTTPResponseStatus(statusCode: request.int("status") ?? 503), "failure \(count) of \(failures)\n", headers: headers)
    }

    /// An OAuth2 token endpoint: any `grant_type` of client_credentials or refresh_token gets `tok-N`.
    static func token(_ request: ServerRequest, state: TestServerState) -> Reply {
        guard request.method == .POST else { return .text(.methodNotAllowed, "POST only\n") }
        let form = String(decoding: request.body, as: UTF8.self)
        guard form.contains("grant_type=client_credentials") || form.contains("grant_type=refresh_token") else {
            return .json(.badRequest, #"{"error":"unsupported_grant_type"}"#)
        }
        let n = state.issueToken()
        let expires = request.int("expires_in") ?? 3600
        // `prefix=` makes tokens a test can look for in what the client wrote.
        let prefix = request.query["prefix"] ?? "tok-"
        return .json(.ok, #"{"access_token":"\#(prefix)\#(n)","token_type":"Bearer","expires_in":\#(expires)}"#,
                     headers: [("Cache-Control", "no-store")])
    }

    static func jsonString(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    static func httpDate(_ date: Date) -> String { httpDateFormatter().string(from: date) }

    /// IMF-fixdate (RFC 9110 §5.6.7), for writing and reading HTTP dates.
    static func httpDateFormatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }

    static func fnv1a(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf29ce484222325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100000001b3 }
        return String(hash, radix: 16)
    }
}
