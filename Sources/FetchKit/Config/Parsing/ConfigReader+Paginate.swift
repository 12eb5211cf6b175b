import Foundation
import Yams

extension ConfigReader {
    static let paginateKeys = ["next", "items", "stop"]
    static let paginateStyles = ["link_header", "json", "cursor", "offset", "page"]

    /// `paginate:` on a route or a job (docs/crawling.md).
    func pagination(_ node: Node) -> Pagination? {
        guard let e = mapping(node, allowed: Self.paginateKeys, what: "paginate") else { return nil }
        let nextNode = requireKey("next", in: e, of: node, what: "paginate")
        let next = nextNode.flatMap(paginationNext)
        let items = e["items"].flatMap { jsonPath($0) }
        var stop = Pagination.Stop()
        if let n = e["stop"], let s = mapping(n, allowed: ["when_empty", "max_pages", "total", "status", "while"], what: "paginate.stop") {
            if let v = s["when_empty"] {
                stop.whenEmpty = bool(v) ?? true
                if items == nil, stop.whenEmpty, let k = s.keyNode("when_empty") {
                    warning("pagination-no-items", "'when_empty' counts the records that 'items' names, and this paginate has no 'items'", at: k,
                            hint: "add items: \"$.path.to.records\"")
                }
            }
            if let v = s["max_pages"] { stop.maxPages = int(v, minimum: 1, name: "max_pages") ?? stop.maxPages }
            if let v = s["total"] {
                stop.total = jsonPath(v)
                if items == nil {
                    error("missing-key", "'stop.total' compares a count of records with 'items', which this paginate does not name", at: v,
                          hint: "add items: \"$.path.to.records\"")
                }
            }
            if let v = s["status"] { stop.statuses = statusSet(v) }
            if let v = s["while"] { stop.whilePath = jsonPath(v) }
        }
        guard let next else { return nil }
        if case .offset = next, items == nil, stop.total == nil, stop.statuses == nil, stop.whilePath == nil, let nextNode {
            warning("pagination-unbounded", "offset pagination without 'items' or a stop rule ends only at max_pages (\(stop.maxPages))", at: nextNode,
                    hint: "add items: so an empty page ends it, or stop: {total: …}")
        } else if case .page = next, items == nil, stop.total == nil, stop.statuses == nil, stop.whilePath == nil, let nextNode {
            warning("pagination-unbounded", "page-number pagination without 'items' or a stop rule ends only at max_pages (\(stop.maxPages))", at: nextNode,
                    hint: "add items: so an empty page ends it, or stop: {status: 404}")
        }
        return Pagination(next: next, items: items, stop: stop, location: location(node))
    }

    /// `next:` — exactly one of the styles.
    private func paginationNext(_ node: Node) -> Pagination.Next? {
        guard let e = mapping(node, allowed: Self.paginateStyles, what: "paginate.next") else { return nil }
        guard e.items.count == 1, let (style, _, value) = e.items.first else {
            if e.items.isEmpty {
                // Only unknown keys: each is reported already.
                if case .mapping(let written) = node, written.count > 0 { return nil }
                error("missing-key", "paginate.next names no style", at: node,
                      hint: "give one of: \(Self.paginateStyles.joined(separator: ", "))")
            } else {
                error("conflicting-keys", "paginate.next gives \(e.items.count) styles (\(e.items.map(\.key).joined(separator: ", "))); give one",
                      at: e.items[1].keyNode)
            }
            return nil
        }
        switch style {
        case "link_header":
            guard let rel = string(value, what: "a link relation (like next)"), !rel.isEmpty else { return nil }
            return .linkHeader(rel: rel)
        case "json":
            return jsonPath(value).map(Pagination.Next.json)
        case "cursor":
            guard let c = mapping(value, allowed: ["from", "param"], what: "paginate.next.cursor") else { return nil }
            let from = requireKey("from", in: c, of: value, what: "cursor").flatMap { jsonPath($0) }
            let param = requireKey("param", in: c, of: value, what: "cursor").flatMap { paramName($0) }
            guard let from, let param else { return nil }
            return .cursor(from: from, param: param)
        case "offset":
            guard let o = mapping(value, allowed: ["param", "limit_param", "limit", "start"], what: "paginate.next.offset") else { return nil }
            let param = requireKey("param", in: o, of: value, what: "offset").flatMap { paramName($0) }
            let limitParam = o["limit_param"].flatMap { paramName($0) }
            let limit = requireKey("limit", in: o, of: value, what: "offset").flatMap { int($0, minimum: 1, name: "limit") }
            let start = o["start"].flatMap { int($0, minimum: 0, name: "start") } ?? 0
            guard let param, let limit else { return nil }
            return .offset(param: param, limitParam: limitParam, limit: limit, start: start)
        case "page":
            guard let p = mapping(value, allowed: ["param", "start"], what: "paginate.next.page") else { return nil }
            let param = requireKey("param", in: p, of: value, what: "page").flatMap { paramName($0) }
            let start = p["start"].flatMap { int($0, minimum: 0, name: "start") } ?? 1
            guard let param else { return nil }
            return .page(param: param, start: start)
        default:
            return nil
        }
    }

    /// A query parameter's name, or a dotted path into a JSON body (`variables.after`).
    private func paramName(_ node: Node) -> String? {
        guard let name = string(node, what: "a parameter name") else { return nil }
        guard !name.isEmpty, !name.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) else {
            error("invalid-value", "invalid parameter name '\(name)'", at: node,
                  hint: "a query parameter's name, or for a JSON body a dotted path like variables.after")
            return nil
        }
        return name
    }

    /// A JSONPath query (RFC 9535 subset), parsed now; a bad one is reported at its column.
    func jsonPath(_ node: Node) -> JSONPath? {
        guard let (text, complete) = scalarText(node, what: "a JSONPath (like $.items)"), complete else { return nil }
        do {
            return try JSONPath(parsing: text)
        } catch {
            var at = location(node)
            if case .scalar(let scalar) = node, !text.contains("\n") {
                at.column += error.offset + (scalar.style == .singleQuoted || scalar.style == .doubleQuoted ? 1 : 0)
            }
            diagnostics.error("invalid-jsonpath", "invalid JSONPath '\(text)': \(error.message)", at: at, hint: error.hint)
            return nil
        }
    }
}

extension ConfigReader {
    /// `capture: {name: {json: PATH | header: NAME | regex: PATTERN, secret: BOOL}}`.
    func captures(_ node: Node) -> [CaptureSpec] {
        guard let e = anyMapping(node, what: "capture") else { return [] }
        var captures: [CaptureSpec] = []
        for (name, keyNode, value) in e.items {
            guard Self.isIdentifier(name, allowDash: false) else {
                error("invalid-id", "invalid capture name '\(name)'", at: keyNode, hint: "start with a letter or '_'; use letters, digits and '_'")
                continue
            }
            guard let c = mapping(value, allowed: ["json", "header", "regex", "secret"], what: "capture '\(name)'") else { continue }
            let sources = c.items.filter { $0.key != "secret" }
            guard sources.count == 1, let (kind, _, sourceNode) = sources.first else {
                if sources.isEmpty {
                    error("missing-key", "capture '\(name)' says nothing to take", at: value, hint: "give one of: json, header, regex")
                } else {
                    error("conflicting-keys", "capture '\(name)' gives \(sources.count) sources (\(sources.map(\.key).joined(separator: ", "))); give one",
                          at: sources[1].keyNode)
                }
                continue
            }
            var source: CaptureSpec.Source?
            switch kind {
            case "json": source = jsonPath(sourceNode).map(CaptureSpec.Source.json)
            case "header":
                if let header = string(sourceNode, what: "a header name") {
                    if Self.isValidHeaderName(header) {
                        source = .header(header)
                    } else {
                        error("invalid-value", "invalid header name '\(header)'", at: sourceNode)
                    }
                }
            default:
                if let pattern = string(sourceNode, what: "a regular expression") {
                    do {
                        source = .regex(try NSRegularExpression(pattern: pattern))
                    } catch {
                        self.error("invalid-pattern", "capture '\(name)' has an invalid regular expression '\(pattern)'", at: sourceNode)
                    }
                }
            }
            let secret = c["secret"].flatMap { bool($0) } ?? false
            if let source { captures.append(CaptureSpec(name: name, source: source, secret: secret, location: location(keyNode))) }
        }
        return captures
    }
}

extension ConfigReader {
    /// `for_each: {job: ID, items: PATH, as: NAME}`; `items` defaults to `$` (an array body's
    /// elements), `as` to `item`.
    func forEach(_ node: Node) -> ForEachSpec? {
        guard let e = mapping(node, allowed: ["job", "items", "as"], what: "for_each") else { return nil }
        let jobNode = requireKey("job", in: e, of: node, what: "for_each")
        let job = jobNode.flatMap { string($0, what: "a job id") }
        let items = e["items"].map { jsonPath($0) } ?? (try? JSONPath(parsing: "$"))
        var name = "item"
        if let n = e["as"], let text = string(n, what: "a placeholder name") {
            if Self.isIdentifier(text, allowDash: false), !["matrix", "row", "jobs", "page"].contains(text) {
                name = text
            } else {
                error("invalid-id", "invalid for_each name '\(text)'", at: n,
                      hint: "a name like repo (used as {{repo.<field>}}); not matrix, row, jobs or page")
            }
        }
        guard let job, let jobNode, let items else { return nil }
        return ForEachSpec(job: job, items: items, name: name, location: location(node), jobLocation: location(jobNode))
    }
}

extension ConfigReader {
    /// `incremental: {param: NAME, from: PATH, initial: VALUE}`.
    func incremental(_ node: Node) -> IncrementalSpec? {
        guard let e = mapping(node, allowed: ["param", "from", "initial"], what: "incremental") else { return nil }
        let param = requireKey("param", in: e, of: node, what: "incremental").flatMap { n -> String? in
            guard let name = string(n, what: "a parameter name") else { return nil }
            guard !name.isEmpty, !name.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) else {
                error("invalid-value", "invalid parameter name '\(name)'", at: n, hint: "a param or query parameter's name, or for a JSON body a dotted path")
                return nil
            }
            return name
        }
        let from = requireKey("from", in: e, of: node, what: "incremental").flatMap { jsonPath($0) }
        let initial = requireKey("initial", in: e, of: node, what: "incremental").flatMap { string($0, what: "the first cursor value") }
        guard let param, let from, let initial else { return nil }
        return IncrementalSpec(param: param, from: from, initial: initial, location: location(node))
    }
}
