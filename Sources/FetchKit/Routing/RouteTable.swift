/// The `fetchctl routes` listing: one row a route with its method, URL template and params.
public enum RouteTable {
    public static func render(_ routes: [CompiledRoute]) -> String {
        let header = ["ROUTE", "METHOD", "URL", "PARAMS"]
        let rows = routes.map { route in
            [route.name, route.method.rawValue, route.urlTemplate, route.params.map(describe).joined(separator: ", ")]
        }
        guard !rows.isEmpty else { return "no routes\n" }
        let widths = (0..<3).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            (0..<3).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
                + "  " + row[3]
        }.map { $0.trimmingTrailingSpaces() }.joined(separator: "\n") + "\n"
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
