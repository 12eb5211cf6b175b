/// `paginate:` of a route or a job: how the next page's request follows from the last response,
/// where a page's records are, and when to stop (docs/crawling.md).
public struct Pagination: Sendable, Equatable {
    /// How the next request is made.
    public enum Next: Sendable, Equatable {
        /// `{link_header: next}`: the `Link` header's target with that relation (RFC 8288), as
        /// GitHub pages.
        case linkHeader(rel: String)
        /// `{json: "$.next"}`: a URL (absolute or relative to the request's) in the body.
        case json(JSONPath)
        /// `{cursor: {from: "$.meta.next_cursor", param: cursor}}`: the value at `from`, sent as the
        /// query parameter `param`, or for a JSON body at the dotted path `param` (`variables.after`).
        case cursor(from: JSONPath, param: String)
        /// `{offset: {param: offset, limit_param: limit, limit: 100, start: 0}}`: `param` grows by
        /// `limit` each page; `limit_param` (when given) sends `limit` too.
        case offset(param: String, limitParam: String?, limit: Int, start: Int)
        /// `{page: {param: page, start: 1}}`: the page number, counting up from `start`.
        case page(param: String, start: Int)

        /// The name the docs and events use: `link_header`, `json`, `cursor`, `offset`, `page`.
        public var style: String {
            switch self {
            case .linkHeader: "link_header"
            case .json: "json"
            case .cursor: "cursor"
            case .offset: "offset"
            case .page: "page"
            }
        }
    }

    /// `stop:`: what ends pagination besides the next request running out.
    public struct Stop: Sendable, Equatable {
        /// `when_empty`: a page with no records is the last. Default true.
        public var whenEmpty = true
        /// `max_pages`: at most this many pages a run (default 1,000); reaching it with more to
        /// fetch ends pagination with a `pagination.stopped` warning.
        public var maxPages = Pagination.defaultMaxPages
        /// `total: "$.total_count"`: stop once this many records have been fetched.
        public var total: JSONPath?
        /// `status: 404`: a response with one of these statuses ends pagination (and is not a page).
        public var statuses: StatusSet?
        /// `while: "$.pageInfo.hasNextPage"`: go on only while this is truthy.
        public var whilePath: JSONPath?

        public init() {}
    }

    public static let defaultMaxPages = 1000

    public var next: Next
    /// `items:`: where a page's records are (an array's elements, or a wildcard's matches).
    public var items: JSONPath?
    public var stop = Stop()
    public var location: SourceLocation

    public init(next: Next, items: JSONPath? = nil, stop: Stop = Stop(), location: SourceLocation) {
        self.next = next
        self.items = items
        self.stop = stop
        self.location = location
    }

    /// Whether a page's body must be read as JSON: for records, a JSON next link or cursor, or a
    /// JSON stop rule.
    public var readsJSON: Bool {
        if items != nil || stop.total != nil || stop.whilePath != nil { return true }
        switch next {
        case .json, .cursor: return true
        case .linkHeader, .offset, .page: return false
        }
    }

    /// A digest of what decides the requests, so a run resumed from recorded progress can tell
    /// that the job's pagination is still the one that made it.
    var fingerprint: String {
        var parts = [next.style]
        switch next {
        case .linkHeader(let rel): parts.append(rel)
        case .json(let path): parts.append(path.text)
        case .cursor(let from, let param): parts += [from.text, param]
        case .offset(let param, let limitParam, let limit, let start): parts += [param, limitParam ?? "", "\(limit)", "\(start)"]
        case .page(let param, let start): parts += [param, "\(start)"]
        }
        parts.append(items?.text ?? "")
        return parts.joined(separator: "\u{1F}")
    }
}
