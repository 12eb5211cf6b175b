import Foundation
import NIOHTTP1

extension TestServerRoutes {
    /// `/cache/<key>`: a response whose caching headers the query sets, for the response cache's
    /// tests and the demo. Parameters (each header is left out when its parameter is `none`):
    /// - `cache_control` (default `max-age=60`, or `max_age=S`), `cache_control2` a second line;
    /// - `etag` (default the key's version, quoted; `W/...` allowed), `last_modified` (default a fixed
    ///   date), `expires`, `date` (default now; `date_offset=S` shifts it), `age`, `vary`, `set_cookie` (`1` for one made up by the server),
    ///   `content_type` (default `application/json`);
    /// - `status` (default 200), `size=N` pads the body to N bytes, `fixed=1` leaves the served count
    ///   out of the body (the same bytes every time, for comparing digests).
    ///
    /// `If-None-Match` (any listed tag, weak comparison) or, without it, `If-Modified-Since` at or after
    /// `Last-Modified` gets a `304` carrying the same validators and caching headers. The body names
    /// the key, the version (`TestServerState.setCacheVersion`) and how many bodies were served for
    /// the key, and echoes the header named by `vary`. `TestServerState.setCacheFailure` makes the
    /// key answer a 5xx instead.
    static func cacheable(_ request: ServerRequest, key: String, state: TestServerState) -> Reply {
        if let failure = state.cacheFailure(key) {
            return .text(HTTPResponseStatus(statusCode: failure), "failing on purpose\n")
        }
        let version = state.cacheVersion(key)
        func param(_ name: String, _ fallback: String?) -> String? {
            guard let value = request.query[name] else { return fallback }
            return value == "none" ? nil : value
        }
        let etag = param("etag", "\"\(version)\"")
        let lastModified = param("last_modified", lastModified)
        var date = Date()
        if let offset = request.int("date_offset") { date.addTimeInterval(TimeInterval(offset)) }
        var headers: [(String, String)] = []
        if let control = param("cache_control", request.int("max_age").map { "max-age=\($0)" } ?? "max-age=60") {
            headers.append(("Cache-Control", control))
        }
        if let control = param("cache_control2", nil) { headers.append(("Cache-Control", control)) }
        if let etag { headers.append(("ETag", etag)) }
        if let lastModified { headers.append(("Last-Modified", lastModified)) }
        if let expires = param("expires", nil) { headers.append(("Expires", expires)) }
        if let value = param("date", httpDate(date)) { headers.append(("Date", value)) }
        if let age = param("age", nil) { headers.append(("Age", age)) }
        if let vary = param("vary", nil) { headers.append(("Vary", vary)) }

        if let etag, let match = request.headers["If-None-Match"].first {
            let tags = match.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            let bare = { (tag: String) in tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag }
            if tags.contains("*") || tags.contains(where: { bare($0) == bare(etag) }) {
                return Reply(status: .notModified, headers: headers)
            }
        } else if let lastModified, let since = request.headers["If-Modified-Since"].first,
                  let sinceDate = parseHTTPDate(since), let modified = parseHTTPDate(lastModified), sinceDate >= modified {
            return Reply(status: .notModified, headers: headers)
        }

        if let cookie = param("set_cookie", nil) {
            // `1`: a cookie whose value appears nowhere in the request, to look for it on disk.
            headers.append(("Set-Cookie", cookie == "1" ? "session=issued-by-server-7f3a9c; Path=/" : cookie))
        }
        headers.append(("Content-Type", param("content_type", "application/json") ?? "application/octet-stream"))
        let served = state.hit("cache:\(key)")
        let varied = request.query["vary"].flatMap { name in request.headers[name].first } ?? ""
        let count = request.query["fixed"] == "1" ? "" : #","served":\#(served)"#
        var text = #"{"key":\#(jsonString(key)),"version":\#(jsonString(version))\#(count),"varied":\#(jsonString(varied))}"#
        if let size = request.int("size"), size > text.utf8.count + 1 {
            text += "\n" + String(repeating: "x", count: size - text.utf8.count - 2) + "\n"
        }
        var reply = Reply(status: HTTPResponseStatus(statusCode: request.int("status") ?? 200), headers: headers, body: Array(text.utf8))
        applyMisbehaviour(request, state: state, to: &reply)
        return reply
    }

    static func parseHTTPDate(_ text: String) -> Date? { httpDateFormatter().date(from: text) }
}
