import Foundation
import NIOCore
import NIOHTTP1

/// A small GitHub-like API under `/gh`, for `examples/github/crawl.yaml` and its tests:
///
/// - `GET /gh/search/repositories?q=…&per_page=P&page=N`: `{"total_count": 45, "incomplete_results":
///   false, "items": [{id, name, full_name, owner: {login}, stargazers_count, updated_at}]}`, with
///   GitHub's absolute `Link` header (`next`, `last`, `prev`, `first`).
/// - `GET /gh/repos/{owner}/{repo}/commits?since=T&per_page=P&page=N`: the repository's commits,
///   newest first, `[{sha, commit: {message, author: {name, date}}}]`, only those after `since`,
///   with `Link` headers. Repository r has 3 + r % 5 commits, and every third one two more each
///   `TestServerState.gitHubDay`, dated after the others.
extension TestServerRoutes {
    static let gitHubRepositories = 45

    static func gitHub(_ request: ServerRequest, parts: [String], state: TestServerState) -> Reply {
        let perPage = min(100, max(1, request.int("per_page") ?? 30))
        let page = max(1, request.int("page") ?? 1)
        let day = state.gitHubDay
        switch (parts.first, parts.count) {
        case ("search", 2) where parts[1] == "repositories":
            let ids = Array(1...gitHubRepositories)
            let slice = ids.dropFirst((page - 1) * perPage).prefix(perPage)
            let items = slice.map { id in
                """
                {"id":\(1000 + id),"name":"repo-\(id)","full_name":"owner-\(id % 4)/repo-\(id)","owner":{"login":"owner-\(id % 4)"},\
                "stargazers_count":\(5000 - id * 7),"updated_at":"2026-01-\(String(format: "%02d", 1 + id % 28))T12:00:00Z"}
                """
            }
            let body = "{\"total_count\":\(ids.count),\"incomplete_results\":false,\"items\":[" + items.joined(separator: ",") + "]}"
            return .json(.ok, body, headers: gitHubLinks(request, page: page, perPage: perPage, total: ids.count))
        case ("repos", 4) where parts[3] == "commits":
            guard let id = Int(parts[2].dropFirst("repo-".count)), (1...gitHubRepositories).contains(id) else {
                return .json(.notFound, #"{"message":"Not Found"}"#)
            }
            let count = 3 + id % 5 + (id % 3 == 0 ? 2 * day : 0)
            let since = request.query["since"]
            // Commit k (from 0) at 2026-01-01 plus k hours and id minutes; newest first.
            let commits = (0..<count).reversed().map { k -> (sha: String, date: String) in
                let minutes = k * 60 + id
                let date = String(format: "2026-01-%02dT%02d:%02d:00Z", 1 + minutes / 1440, (minutes / 60) % 24, minutes % 60)
                return (String(format: "%040x", id * 1000 + k), date)
            }.filter { since == nil || $0.date > since! }
            let slice = commits.dropFirst((page - 1) * perPage).prefix(perPage)
            let body = "[" + slice.map { commit in
                "{\"sha\":\"\(commit.sha)\",\"commit\":{\"message\":\"change \(commit.sha.suffix(4))\",\"author\":{\"name\":\"dev\",\"date\":\"\(commit.date)\"}}}"
            }.joined(separator: ",") + "]"
            return .json(.ok, body, headers: gitHubLinks(request, page: page, perPage: perPage, total: commits.count))
        default:
            return .json(.notFound, #"{"message":"Not Found"}"#)
        }
    }

    /// GitHub's pagination links: absolute, the request's query with `page` replaced.
    static func gitHubLinks(_ request: ServerRequest, page: Int, perPage: Int, total: Int) -> [(String, String)] {
        let last = max(1, (total + perPage - 1) / perPage)
        let host = request.headers["Host"].first ?? "127.0.0.1"
        let others = request.query.filter { $0.key != "page" }.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.value)" }
        func link(_ n: Int, _ rel: String) -> String {
            "<http://\(host)\(request.path)?\((others + ["page=\(n)"]).joined(separator: "&"))>; rel=\"\(rel)\""
        }
        var links: [String] = []
        if page < last { links += [link(page + 1, "next"), link(last, "last")] }
        if page > 1 { links += [link(1, "first"), link(page - 1, "prev")] }
        return links.isEmpty ? [] : [("Link", links.joined(separator: ", "))]
    }
}
