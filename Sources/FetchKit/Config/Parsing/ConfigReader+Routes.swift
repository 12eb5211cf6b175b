import Yams

extension ConfigReader {
    static let routeKeys = ["method", "path", "description", "params", "download", "paginate"] + RequestKeys.all + BehaviourKeys.all
    static let paramKeys = ["type", "required", "default", "enum", "minimum", "maximum", "pattern", "description"]

    /// Reads `service`, `base_url`, `defaults` and `routes` of a file that has routes.
    func routeFile(_ top: Entries, root: Node) -> RouteFile? {
        let serviceNode = requireKey("service", in: top, of: root, what: "a file with routes")
        let baseNode = requireKey("base_url", in: top, of: root, what: "a file with routes")
        var service: String?
        if let serviceNode, let name = string(serviceNode) {
            if Self.isIdentifier(name, allowDash: true) {
                service = name
            } else {
                error("invalid-id", "invalid service name '\(name)'", at: serviceNode,
                      hint: "start with a letter; use letters, digits, '_' and '-'")
            }
        }
        let baseURL = baseNode.flatMap { url($0, what: "base_url") }
        var defaults = Behaviour()
        if let n = top["defaults"], let e = mapping(n, allowed: BehaviourKeys.all, what: "defaults") {
            defaults = behaviour(e)
        }
        var routes: [RouteSpec] = []
        if let n = top["routes"], let e = anyMapping(n, what: "routes") {
            for (name, keyNode, value) in e.items {
                if !Self.isIdentifier(name, allowDash: false) {
                    error("invalid-id", "invalid route name '\(name)'", at: keyNode,
                          hint: "start with a letter or '_'; use letters, digits and '_'")
                    continue
                }
                if let route = route(name: name, service: service ?? "", node: value, keyNode: keyNode) { routes.append(route) }
            }
        }
        guard let service, let baseURL else { return nil }
        return RouteFile(path: file.path, service: service, baseURL: baseURL, description: top["description"].flatMap { string($0) },
                         defaults: defaults, routes: routes)
    }

    static func isIdentifier(_ s: String, allowDash: Bool) -> Bool {
        guard let first = s.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else { return false }
        return s.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || (allowDash && $0 == "-"))
        }
    }

    func route(name: String, service: String, node: Node, keyNode: Node) -> RouteSpec? {
        guard let e = mapping(node, allowed: Self.routeKeys, what: "route '\(name)'") else { return nil }
        let method = e["method"].flatMap { self.method($0) } ?? HTTPMethod.get
        // Keep reading after a bad path so one pass reports every problem of the route.
        let pathNode = requireKey("path", in: e, of: node, what: "route '\(name)'")
        let path = pathNode.flatMap { string($0, what: "a path (like /users/{{id}})") }
        if let path, let pathNode, !path.hasPrefix("/") {
            error("invalid-value", "route path must start with '/', found '\(path)'", at: pathNode)
        }
        var params: [ParamSpec] = []
        if let n = e["params"], let pe = anyMapping(n, what: "params") {
            for (pname, pkey, pvalue) in pe.items {
                if !Self.isIdentifier(pname, allowDash: false) {
                    error("invalid-id", "invalid param name '\(pname)'", at: pkey, hint: "use letters, digits and '_'")
                    continue
                }
                if let spec = paramSpec(name: pname, node: pvalue, keyNode: pkey) { params.append(spec) }
            }
        }
        // Path placeholders that are not declared are implicitly required strings.
        for placeholder in Template(path ?? "").placeholders where !params.contains(where: { $0.name == placeholder }) {
            guard let pathNode else { break }
            if placeholder.hasPrefix("matrix.") || !Template.isValidName(placeholder) {
                error("undeclared-placeholder", "'{{\(placeholder)}}' in a route path must name a param", at: pathNode)
                continue
            }
            var implicit = ParamSpec(name: placeholder, location: location(pathNode))
            implicit.required = true
            implicit.isImplicit = true
            params.append(implicit)
        }
        var download: DownloadOptions?
        if let n = e["download"] {
            if case .scalar = n {
                if let on = bool(n), on { download = DownloadOptions() }
            } else if let d = mapping(n, allowed: ["resumable", "segments"], what: "download") {
                download = DownloadOptions(resumable: d["resumable"].flatMap { bool($0) } ?? true, segments: d["segments"].flatMap(segments))
                if download?.resumable == false, let count = download?.segments, count > 1, let k = d.keyNode("segments") {
                    error("conflicting-keys", "'segments: \(count)' needs range requests, which 'resumable: false' turns off", at: k,
                          hint: "remove one of them")
                }
            }
        }
        let request = requestSpec(e, method: method)
        let behaviour = behaviour(e)
        let pagination = e["paginate"].flatMap(self.pagination)
        if pagination != nil, download != nil, let k = e.keyNode("paginate") {
            error("conflicting-keys", "route '\(name)' both streams its response to disk (download) and pages through results (paginate); give one", at: k)
        }
        warnIfCacheIsIgnored(e, method: method, downloads: download != nil)
        guard let path else { return nil }
        let route = RouteSpec(service: service, name: name, method: method, path: path,
                              description: e["description"].flatMap { string($0) }, params: params, request: request,
                              behaviour: behaviour, download: download, pagination: pagination, location: location(keyNode))
        checkPlaceholders(of: route, entries: e)
        return route
    }

    func paramSpec(name: String, node: Node, keyNode: Node) -> ParamSpec? {
        guard let e = mapping(node, allowed: Self.paramKeys, what: "param '\(name)'") else { return nil }
        var spec = ParamSpec(name: name, location: location(keyNode))
        if let n = e["type"] { spec.type = choice(n, ParamSpec.Kind.self, what: "param type") ?? .string }
        if let n = e["required"] { spec.required = bool(n) ?? false }
        if let n = e["description"] { spec.description = string(n) }
        if let n = e["minimum"] { spec.minimum = double(n) }
        if let n = e["maximum"] { spec.maximum = double(n) }
        if let n = e["pattern"], let pattern = string(n) {
            if (try? NSRegularExpression(pattern: pattern)) == nil {
                error("invalid-pattern", "param '\(name)' has an invalid regular expression '\(pattern)'", at: n)
            } else {
                spec.pattern = pattern
            }
        }
        if let n = e["enum"], let items = sequence(n, what: "enum") { spec.enumValues = items.map(value) }
        if let n = e["default"] {
            let v = value(n)
            switch ParamChecker.check(v, against: spec) {
            case .success(let coerced): spec.defaultValue = coerced
            case .failure(let problem): error("invalid-param", "default of param '\(name)' \(problem.message)", at: n)
            }
        }
        return spec
    }

    /// Every `{{name}}` in a route must be a declared param; every declared param should be used.
    func checkPlaceholders(of route: RouteSpec, entries e: Entries) {
        var used = Set(Template(route.path).placeholders)
        func visit(_ node: Node) {
            switch node {
            case .scalar(let s):
                for name in Template(s.string).placeholders {
                    used.insert(name)
                    if route.param(named: name) == nil {
                        error("undeclared-placeholder", "'{{\(name)}}' is not a param of route '\(route.name)'", at: node,
                              hint: EditDistance.hint(for: name, among: route.params.map(\.name)) ?? "declare it under params")
                    }
                }
            case .mapping(let m): for (k, v) in m { visit(k); visit(v) }
            case .sequence(let s): s.forEach(visit)
            case .alias: break
            }
        }
        for key in ["parameters", "query", "body", "headers"] { if let n = e[key] { visit(n) } }
        for param in route.params where !param.isImplicit && !used.contains(param.name) {
            diagnostics.warning("unused-param", "param '\(param.name)' of route '\(route.name)' is used nowhere", at: param.location,
                                hint: "use it as {{\(param.name)}} in path, parameters, query, headers or body, or remove it")
        }
    }
}

import Foundation
