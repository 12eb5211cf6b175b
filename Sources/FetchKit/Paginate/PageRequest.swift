import Foundation

/// Where the next page comes from: the first request as the route builds it, a URL the last page
/// pointed at, a cursor it returned, or an offset or page number.
public enum PageCursor: Sendable, Hashable {
    case first
    case url(String)
    case cursor(String)
    case number(Int)

    /// As the state store keeps it.
    var encoded: String {
        switch self {
        case .first: "first"
        case .url(let url): "url:" + url
        case .cursor(let value): "cursor:" + value
        case .number(let n): "number:\(n)"
        }
    }

    init?(encoded: String) {
        if encoded == "first" { self = .first; return }
        guard let colon = encoded.firstIndex(of: ":") else { return nil }
        let value = String(encoded[encoded.index(after: colon)...])
        switch encoded[..<colon] {
        case "url": self = .url(value)
        case "cursor": self = .cursor(value)
        case "number":
            guard let n = Int(value) else { return nil }
            self = .number(n)
        default: return nil
        }
    }
}

/// One page's request: the job's router builds the request, and the cursor changes it — the URL
/// replaced by a next link, or a parameter set (in the query, or at a dotted path of a JSON body).
struct PageRequest: RequestConvertible {
    var router: Router
    var next: Pagination.Next
    var cursor: PageCursor
    /// Headers that carry credentials: dropped when a next link leaves the first request's origin.
    var credentialHeaders: Set<String>

    func makeRequest() throws -> BuiltRequest {
        var request = try router.makeRequest()
        switch (next, cursor) {
        case (_, .first):
            break
        case (.linkHeader, .url(let target)), (.json, .url(let target)):
            guard let url = URL(string: target, relativeTo: request.url)?.absoluteURL, let scheme = url.scheme?.lowercased(),
                  scheme == "http" || scheme == "https", url.host != nil else {
                throw RequestBuildError("the next page's link '\(target)' is not an http(s) URL")
            }
            if !Self.sameOrigin(url, request.url) {
                // As a redirect to another host would: its credentials stay with the first.
                for name in credentialHeaders.union(["authorization", "cookie", "proxy-authorization"]) {
                    request.headers.remove(name: name)
                }
            }
            request.url = url
        case (.cursor(_, let param), .cursor(let value)):
            try Self.set(param, to: .string(value), in: &request)
        case (.offset(let param, let limitParam, let limit, _), .number(let offset)):
            try Self.set(param, to: .number(String(offset)), in: &request)
            if let limitParam { try Self.set(limitParam, to: .number(String(limit)), in: &request) }
        case (.page(let param, _), .number(let page)):
            try Self.set(param, to: .number(String(page)), in: &request)
        default:
            throw RequestBuildError("the recorded position '\(cursor.encoded)' does not fit \(next.style) pagination")
        }
        return request
    }

    /// The first cursor of a pagination: the start offset or page number, or the route's request.
    static func firstCursor(of next: Pagination.Next) -> PageCursor {
        switch next {
        case .offset(_, _, _, let start): .number(start)
        case .page(_, let start): .number(start)
        case .linkHeader, .json, .cursor: .first
        }
    }

    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased() && a.port == b.port
    }

    /// Sets `param` in a JSON body (a dotted path, objects made as needed), or else in the query
    /// (replacing a parameter of that name).
    static func set(_ param: String, to value: JSONValue, in request: inout BuiltRequest) throws {
        if case .data(let data) = request.body, isJSON(request) {
            guard var body = try? JSONValue.parse(data) else { throw RequestBuildError("the request's JSON body is not JSON") }
            let path = param.split(separator: ".").map(String.init)
            guard set(path[...], to: value, in: &body) else {
                throw RequestBuildError("'\(param)' does not lead to an object member in the request's JSON body")
            }
            request.body = .data(Data(body.compactJSON.utf8))
            return
        }
        guard var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) else {
            throw RequestBuildError("cannot set '\(param)' in the URL")
        }
        let encoded = URLEncodedFormEncoder().escape(param) + "=" + URLEncodedFormEncoder().escape(value.text ?? "")
        var items = (components.percentEncodedQuery ?? "").split(separator: "&", omittingEmptySubsequences: true).filter { item in
            let name = item.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            return (name.removingPercentEncoding ?? name) != param
        }.map(String.init)
        items.append(encoded)
        components.percentEncodedQuery = items.joined(separator: "&")
        guard let url = components.url else { throw RequestBuildError("cannot set '\(param)' in the URL") }
        request.url = url
    }

    private static func isJSON(_ request: BuiltRequest) -> Bool {
        guard let type = request.headers["Content-Type"]?.lowercased() else { return false }
        return type.hasPrefix("application/json") || (type.contains("+json"))
    }

    private static func set(_ path: ArraySlice<String>, to value: JSONValue, in node: inout JSONValue) -> Bool {
        guard let key = path.first else { node = value; return true }
        if case .null = node { node = .object([]) }
        guard case .object(var members) = node else { return false }
        if let index = members.firstIndex(where: { $0.key == key }) {
            guard set(path.dropFirst(), to: value, in: &members[index].value) else { return false }
        } else {
            var child = JSONValue.null
            guard set(path.dropFirst(), to: value, in: &child) else { return false }
            members.append((key, child))
        }
        node = .object(members)
        return true
    }
}

extension Router {
    /// The request for page `page` (from 1) of the route's pagination, as `render --page N` shows
    /// it: page 1 always; a later page only where the style can tell it without the pages before
    /// (`offset`, `page`), since a next link or cursor comes from the last response.
    public func makeRequest(page: Int, of pagination: Pagination) throws -> BuiltRequest {
        guard page >= 1 else { throw RequestBuildError("pages count from 1") }
        let cursor: PageCursor
        switch pagination.next {
        case .offset(_, _, let limit, let start):
            let (skipped, overflow) = (page - 1).multipliedReportingOverflow(by: limit)
            guard !overflow, skipped <= Int.max - start else { throw RequestBuildError("page \(page) is beyond any offset") }
            cursor = .number(start + skipped)
        case .page(_, let start):
            guard page - 1 <= Int.max - start else { throw RequestBuildError("page \(page) is beyond any page number") }
            cursor = .number(start + page - 1)
        case .linkHeader, .json, .cursor:
            guard page == 1 else {
                throw RequestBuildError("route \(route.name) pages by \(pagination.next.style): the request for page \(page) comes from page \(page - 1)'s response, so only page 1 can be shown")
            }
            cursor = .first
        }
        return try PageRequest(router: self, next: pagination.next, cursor: cursor, credentialHeaders: []).makeRequest()
    }
}
