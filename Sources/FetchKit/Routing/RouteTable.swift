/// The `fetchctl routes` listing: one row a route with its method, URL template, how it pages
/// (`-` for one request) and params.
public enum RouteTable {
    public static func render(_ routes: [CompiledRoute]) -> String {
        let header = ["ROUTE", "METHOD", "URL", "PAGES", "PARAMS"]
        let rows = routes.map { route in
            [route.name, route.method.rawValue, route.urlTemplate, route.spec?.pagination.map(describe) ?? "-",
             route.params.map(describe).joined(separator: ", ")]
        }
        guard !rows.isEmpty else { return "no routes\n" }
        let widths = (0..<4).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            (0..<4).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
                + "  " + row[4]
        }.map { $0.trimmingTrailingSpaces() }.joined(separator: "\n") + "\n"
    }

    /// How a route pages, in a few words: `link rel=next, items $.items`, `cursor $.next → cursor`.
    static func describe(_ pagination: Pagination) -> String {
        var text: String
        switch pagination.next {
        case .linkHeader(let rel): text = "link rel=\(rel)"
        case .json(let path): text = "json \(path.text)"
        case .cursor(let from, let param): text = "cursor \(from.text) → \(param)"
        case .offset(let param, _, let limit, _): text = "offset \(param) +\(limit)"
        case .page(let param, let start): text = "page \(param) from \(start)"
        }
        if let items = pagination.items { text += ", items \(items.text)" }
        return text
    }

    /// `name: type` with `, required` or `= default`, e.g. `page: integer = 1`, `query: string, required`.
    static func describe(_ param: ParamSpec) -> String {
        var text = "\(param.name): \(param.type.rawValue)"
        if let value = param.defaultValue {
            text += " = \(value.text)"
        } else if param.required {
            text += " (required)"
        }
        return text
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}

import Foundation
