import Foundation
import NIOCore
import NIOHTTP1

/// Paginated endpoints, one per style, over one list of `total` records (default 95) of
/// `{"id": n, "name": "item-n", "updated_at": "<time n minutes after 2026-01-01T00:00:00Z>"}`:
///
/// - `/pages/link?page=N&per_page=P`: a JSON array, and `Link: <…>; rel="next"` (plus `prev`,
///   `first`, `last`), relative by default, absolute with `absolute=1`, as GitHub pages.
/// - `/pages/json?page=N`: `{"items": […], "next": "/pages/json?page=N+1…" | null, "total_count": T}`.
/// - `/pages/cursor?cursor=C&per_page=P`: `{"data": […], "meta": {"next_cursor": "c<offset>" | null}}`.
/// - `/pages/offset?offset=O&limit=L`: `{"results": […], "total": T}`.
/// - `/pages/number?page=N`: `{"items": […]}`, empty past the end; with `notfound=1` a 404 there.
/// - `/pages/loop?page=N`: as `/pages/json`, but page 3's next link is page 2 again.
/// - POST `/pages/graphql` with `{"variables": {"after": C, "first": P}}`:
///   `{"data": {"repos": {"nodes": […], "pageInfo": {"hasNextPage": B, "endCursor": C}}}}`.
///
/// Every style takes `fail_on=N` (page N answers 500, the first `fail_times` times, default always)
/// and `delay_ms=M` (each page waits that long: a slow API); `slow_on=N&slow_ms=M` delays page N
/// only, the first `slow_times` times (default once), for a test to kill the run there. `since=T` keeps the records updated
/// after T (an incremental fetch); `updated_after=K` shifts the list K minutes later.
extension TestServerRoutes {
    static func pages(_ request: ServerRequest, style: String, state: TestServerState) -> Reply {
        let total = request.int("total") ?? 95
        let perPage = max(1, request.int("per_page") ?? request.int("limit") ?? 10)
        // The records are ids 1...total, updated in that order: those after `since` are a suffix,
        // found by bisection (a million-record list costs nothing per page).
        var first = 1
        if let since = request.query["since"] {
            var low = 1, high = total + 1
            while low < high {
                let middle = (low + high) / 2
                if updatedAt(middle, request) > since { high = middle } else { low = middle + 1 }
            }
            first = low
        }
        let list = first..<max(first, total + 1)
        func page(from offset: Int, count: Int) -> [Int] {
            guard offset >= 0, offset < list.count else { return [] }
            return Array(list.dropFirst(offset).prefix(count))
        }
        // Which page this is (1-based), for fail_on.
        let pageNumber: Int
        switch style {
        case "offset": pageNumber = (request.int("offset") ?? 0) / perPage + 1
        case "cursor": pageNumber = (request.query["cursor"].flatMap { Int($0.dropFirst()) } ?? 0) / perPage + 1
        case "graphql":
            let variables = graphQLVariables(request)
            let after = variables["after"] as? String
            pageNumber = (after.flatMap { Int($0.dropFirst()) } ?? 0) / max(1, (variables["first"] as? Int) ?? perPage) + 1
        default: pageNumber = request.int("page") ?? 1
        }
        if let failOn = request.int("fail_on"), pageNumber == failOn {
            let times = request.int("fail_times") ?? Int.max
            if state.hit("pages-fail:\(request.path):\(failOn):\(request.query["key"] ?? "")") <= times {
                return .text(.internalServerError, "page \(failOn) fails\n")
            }
        }
        var slowFor: Int64 = 0
        if let slowOn = request.int("slow_on"), pageNumber == slowOn,
           state.hit("pages-slow:\(request.path):\(slowOn):\(request.query["key"] ?? "")") <= (request.int("slow_times") ?? 1) {
            slowFor = Int64(request.int("slow_ms") ?? 30_000)
        }
        var reply: Reply
        let keep = request.query.filter { !["page", "offset", "cursor"].contains($0.key) }
            .sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        let suffix = keep.isEmpty ? "" : "&" + keep
        switch style {
        case "link":
            let number = max(1, request.int("page") ?? 1)
            let ids = page(from: (number - 1) * perPage, count: perPage)
            let lastPage = max(1, (list.count + perPage - 1) / perPage)
            let base = request.int("absolute") == 1 ? "http://\(request.headers["Host"].first ?? "127.0.0.1")/pages/link" : "/pages/link"
            var links: [String] = []
            if number < lastPage { links.append("<\(base)?page=\(number + 1)\(suffix)>; rel=\"next\"") }
            if number > 1 { links.append("<\(base)?page=\(number - 1)\(suffix)>; rel=\"prev\"") }
            links.append("<\(base)?page=1\(suffix)>; rel=\"first\"")
            links.append("<\(base)?page=\(lastPage)\(suffix)>; rel=\"last\"")
            reply = .json(.ok, "[" + ids.map { record($0, request) }.joined(separator: ",") + "]", headers: [("Link", links.joined(separator: ", "))])
        case "json", "loop":
            let number = max(1, request.int("page") ?? 1)
            let ids = page(from: (number - 1) * perPage, count: perPage)
            var next: Int? = number * perPage < list.count ? number + 1 : nil
            if style == "loop", number == 3 { next = 2 }
            // `next_base=http://localhost:PORT`: the next link is absolute, on that origin.
            let nextBase = request.query["next_base"] ?? ""
            let nextText = next.map { "\"\(nextBase)/pages/\(style)?page=\($0)\(suffix)\"" } ?? "null"
            reply = .json(.ok, "{\"items\":[" + ids.map { record($0, request) }.joined(separator: ",") + "],\"next\":\(nextText),\"total_count\":\(list.count)}")
        case "cursor":
            let offset = request.query["cursor"].flatMap { Int($0.dropFirst()) } ?? 0
            let ids = page(from: offset, count: perPage)
            let next = offset + perPage < list.count ? "\"c\(offset + perPage)\"" : "null"
            reply = .json(.ok, "{\"data\":[" + ids.map { record($0, request) }.joined(separator: ",") + "],\"meta\":{\"next_cursor\":\(next)}}")
        case "offset":
            let offset = request.int("offset") ?? 0
            let ids = page(from: offset, count: perPage)
            reply = .json(.ok, "{\"results\":[" + ids.map { record($0, request) }.joined(separator: ",") + "],\"total\":\(list.count)}")
        case "number":
            let number = request.int("page") ?? 1
            let ids = page(from: (number - 1) * perPage, count: perPage)
            if ids.isEmpty, request.int("notfound") == 1 { return .text(.notFound, "no page \(number)\n") }
            reply = .json(.ok, "{\"items\":[" + ids.map { record($0, request) }.joined(separator: ",") + "]}")
        case "graphql":
            guard request.method == .POST else { return .text(.methodNotAllowed, "POST a query\n") }
            let variables = graphQLVariables(request)
            let first = (variables["first"] as? Int) ?? perPage
            let offset = (variables["after"] as? String).flatMap { Int($0.dropFirst()) } ?? 0
            let ids = page(from: offset, count: first)
            let hasNext = offset + first < list.count
            reply = .json(.ok, "{\"data\":{\"repos\":{\"nodes\":[" + ids.map { record($0, request) }.joined(separator: ",")
                          + "],\"pageInfo\":{\"hasNextPage\":\(hasNext),\"endCursor\":\"c\(offset + ids.count)\"}}}}")
        default:
            return .text(.notFound, "no paginated style '\(style)'\n")
        }
        reply.delay = .milliseconds(Int64(request.int("delay_ms") ?? 0) + slowFor)
        return reply
    }

    private static func graphQLVariables(_ request: ServerRequest) -> [String: Any] {
        let body = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any]
        return body?["variables"] as? [String: Any] ?? [:]
    }

    /// 2026-01-01T00:00:00Z plus `id` (and `updated_after`) minutes, as ISO 8601 UTC: later ids
    /// are later times, and sort so as text.
    static func updatedAt(_ id: Int, _ request: ServerRequest) -> String {
        var seconds = time_t(1_767_225_600 + 60 * (id + (request.int("updated_after") ?? 0)))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:00Z", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min)
    }

    static func record(_ id: Int, _ request: ServerRequest) -> String {
        "{\"id\":\(id),\"name\":\"item-\(id)\",\"updated_at\":\"\(updatedAt(id, request))\"}"
    }
}
