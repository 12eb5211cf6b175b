import Foundation
import Yams

extension ConfigReader {
    static let settingsKeys = ["concurrency", "per_host", "rate_limits", "output_dir", "state_dir", "fail_fast", "network", "http_version", "proxy",
                               "download"] + BehaviourKeys.all
    static let adHocOnlyKeys = ["method"] + RequestKeys.all
    static let jobKeys = ["id", "description", "route", "url", "params", "matrix", "from", "key", "needs", "save", "download", "save_headers", "checksum", "paginate", "save_items", "capture", "for_each", "incremental"]
        + adHocOnlyKeys + BehaviourKeys.all

    func settings(_ node: Node?) -> Settings {
        var s = Settings(outputDir: resolvePath("out"), stateDir: resolvePath(".fetchctl"))
        guard let node, let e = mapping(node, allowed: Self.settingsKeys, what: "settings") else { return s }
        if let n = e["concurrency"] { s.concurrency = int(n, minimum: 1, name: "concurrency") ?? s.concurrency }
        if let n = e["per_host"] { s.perHost = int(n, minimum: 1, name: "per_host") ?? s.perHost }
        if let n = e["rate_limits"], let r = anyMapping(n, what: "rate_limits") {
            for (host, _, value) in r.items { if let rate = rate(value) { s.rateLimits.append((host, rate)) } }
        }
        if let n = e["output_dir"], let path = string(n) { s.outputDir = resolvePath(path) }
        if let n = e["state_dir"], let path = string(n) { s.stateDir = resolvePath(path) }
        if let n = e["fail_fast"] { s.failFast = bool(n) ?? false }
        if let n = e["network"], let network = mapping(n, allowed: ["max_wait"], what: "network") {
            if let wait = network["max_wait"] { s.networkMaxWait = duration(wait) ?? s.networkMaxWait }
        }
        if let n = e["proxy"], let proxy = mapping(n, allowed: ["url", "no_proxy"], what: "proxy") {
            if let u = proxy["url"], let (url, complete) = scalarText(u, what: "a proxy URL") {
                s.proxyURL = url
                if complete, !url.isEmpty {
                    do {
                        let parsed = try Proxy(parsing: url)
                        if let password = parsed.password, !password.isEmpty { secrets.insert(password) }
                    } catch {
                        self.error("invalid-url", (error as? FetchError)?.message ?? "\(error)", at: u,
                                   hint: "write http://host:port or socks5://host:port (credentials go before the host, as user:password@); \"\" sends every request direct")
                    }
                }
            }
            if let list = proxy["no_proxy"] {
                if case .sequence = list {
                    s.noProxy = sequence(list, what: "proxy.no_proxy")?.compactMap { string($0) }
                } else if let text = string(list) {
                    s.noProxy = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                }
            }
        }
        if let n = e["download"], let download = mapping(n, allowed: ["segments"], what: "download") {
            if let k = download["segments"] {
                s.downloadSegments = segments(k) ?? s.downloadSegments
                if s.downloadSegments > s.perHost {
                    warning("segments-limited", "only \(s.perHost) connections to one host open at once (per_host), so \(s.perHost) of the \(s.downloadSegments) segments run at a time",
                            at: k, hint: "raise per_host to \(s.downloadSegments)")
                }
            }
        }
        if let n = e["http_version"] { s.httpVersion = choice(n, AsyncHTTPClientTransport.HTTPVersion.self, what: "http_version") ?? s.httpVersion }
        s.behaviour = behaviour(e, inSettings: true)
        if let size = cacheStore.maxSize { s.cacheMaxSize = size }
        s.cacheDir = cacheStore.directory
        return s
    }

    func jobs(_ node: Node) -> [JobSpec] {
        guard let items = sequence(node, what: "jobs") else { return [] }
        return items.compactMap(job)
    }

    func job(_ node: Node) -> JobSpec? {
        guard let e = mapping(node, allowed: Self.jobKeys, what: "job") else { return nil }
        guard let idNode = requireKey("id", in: e, of: node, what: "job"), let id = string(idNode) else { return nil }
        if !Self.isJobID(id) {
            error("invalid-id", "invalid job id '\(id)'", at: idNode, hint: "use letters, digits, '_', '.' and '-'")
        }
        // Keep reading after a bad target so one pass reports every problem of the job.
        var target: JobSpec.Target?
        switch (e["route"], e["url"]) {
        case (let r?, nil):
            let name = string(r, what: "a route name (service.route)")
            for key in Self.adHocOnlyKeys {
                if let k = e.keyNode(key) {
                    error("key-not-allowed", "'\(key)' is for ad-hoc jobs (url:); job '\(id)' uses route '\(name ?? "")'", at: k,
                          hint: "set it on the route, or use url: instead of route:")
                }
            }
            target = name.map { .route($0, location(r)) }
        case (nil, let u?):
            let url = url(u)
            let method = e["method"].flatMap { self.method($0) } ?? HTTPMethod.get
            let request = requestSpec(e, method: method)
            target = url.map { .url($0, method: method, request: request) }
        case (.some, .some):
            error("conflicting-keys", "job '\(id)' has both 'route' and 'url'; give one", at: e.keyNode("url")!)
        case (nil, nil):
            error("missing-key", "job '\(id)' needs 'route' or 'url'", at: node)
        }
        var params: [(String, ParameterValue, SourceLocation, SourceLocation)] = []
        if let n = e["params"], let p = anyMapping(n, what: "params") {
            params = p.items.map { ($0.key, value($0.value), location($0.value), location($0.keyNode)) }
        }
        var matrix: [(String, [ParameterValue], SourceLocation)] = []
        if let n = e["matrix"], let m = anyMapping(n, what: "matrix") {
            for (key, keyNode, value) in m.items {
                guard let list = sequence(value, what: "matrix values") else { continue }
                if list.isEmpty {
                    error("invalid-value", "matrix key '\(key)' has no values", at: value)
                    continue
                }
                let values = list.map(self.value)
                if values.contains(where: { if case .array = $0 { true } else if case .object = $0 { true } else { false } }) {
                    error("type-mismatch", "matrix values must be scalars (strings, numbers, booleans)", at: value)
                    continue
                }
                matrix.append((key, values, location(keyNode)))
            }
        }
        var needs: [(String, SourceLocation)] = []
        if let n = e["needs"] {
            for item in sequence(n, what: "needs") ?? [] { if let need = string(item) { needs.append((need, location(item))) } }
        }
        var save = e["save"].flatMap { n in string(n).map { OutputPath(template: $0, location: location(n)) } }
        var (download, downloadSegments) = e["download"].map(downloadTarget) ?? (nil, nil)
        if save != nil, let d = e.keyNode("download") {
            error("conflicting-keys", "job '\(id)' has both 'save' and 'download'; give one", at: d)
            save = nil
            download = nil
            downloadSegments = nil
        }
        let saveHeaders = e["save_headers"].flatMap { n in string(n).map { OutputPath(template: $0, location: location(n)) } }
        let checksum = e["checksum"].flatMap { self.checksum($0) }
        if case .url(_, let method, _)? = target {
            warnIfCacheIsIgnored(e, method: method, downloads: download != nil)
        } else if download != nil {
            warnIfCacheIsIgnored(e, method: .get, downloads: true)
        }
        if let c = e.keyNode("checksum"), e["download"] == nil {
            error("conflicting-keys", "'checksum' needs 'download' (only downloads are verified)", at: c)
        }
        let from = e["from"].flatMap { dataFile($0) }
        let key = e["key"].flatMap { n in string(n).map { OutputPath(template: $0, location: location(n)) } }
        let forEach = e["for_each"].flatMap(self.forEach)
        if let k = e.keyNode("key"), e["from"] == nil, e["for_each"] == nil {
            error("conflicting-keys", "'key' names the jobs of a data file or a fan-out; job '\(id)' has no 'from' or 'for_each'", at: k,
                  hint: "add from: {file: …}, or remove key:")
        }
        if let k = e.keyNode("incremental"), download != nil {
            error("conflicting-keys", "'incremental' reads its cursor from a JSON response; job '\(id)' downloads a file", at: k)
        }
        if let k = e.keyNode("for_each"), e["from"] != nil {
            error("conflicting-keys", "job '\(id)' has both 'from' and 'for_each'; give one", at: k)
        }
        // `paginate: false` turns the route's pagination off for this job.
        var paginationOff = false
        var pagination: Pagination?
        if let n = e["paginate"], case .scalar = n {
            if bool(n) == false {
                paginationOff = true
            } else if bool(n) == true {
                error("invalid-value", "'paginate: true' says nothing about how to page", at: n,
                      hint: "give {next: …, items: …}, or false to turn the route's pagination off")
            }
        } else {
            pagination = e["paginate"].flatMap(self.pagination)
        }
        let captures = e["capture"].map(self.captures) ?? []
        if let k = e.keyNode("capture"), download != nil, captures.contains(where: { $0.source.readsBody }) {
            error("conflicting-keys", "a download's body goes to disk, so 'json' and 'regex' captures can't read it; job '\(id)' downloads", at: k,
                  hint: "capture a header, or use save:")
        }
        let saveItems = e["save_items"].flatMap { n in string(n).map { OutputPath(template: $0, location: location(n)) } }
        if let k = e.keyNode("save_items"), download != nil {
            error("conflicting-keys", "'save_items' writes the records of a paginated response; job '\(id)' downloads one file", at: k)
        }
        if pagination != nil, download != nil, let k = e.keyNode("paginate") {
            error("conflicting-keys", "job '\(id)' both downloads a file and pages through results (paginate); give one", at: k)
        }
        guard let target else { return nil }
        return JobSpec(id: id, description: e["description"].flatMap { string($0) }, target: target, params: params,
                       matrix: matrix, needs: needs, save: save, download: download, saveHeaders: saveHeaders, checksum: checksum,
                       from: from, key: key, behaviour: behaviour(e), location: location(idNode), baseDirectory: directory,
                       downloadSegments: downloadSegments, pagination: pagination, saveItems: saveItems, captures: captures, forEach: forEach,
                       incremental: e["incremental"].flatMap(self.incremental), paginationOff: paginationOff)
    }

    /// `download: PATH`, or `download: {path: PATH, segments: N}` to fetch it over N connections.
    func downloadTarget(_ node: Node) -> (OutputPath?, (count: Int, location: SourceLocation)?) {
        guard case .mapping = node else { return (string(node).map { OutputPath(template: $0, location: location(node)) }, nil) }
        guard let d = mapping(node, allowed: ["path", "segments"], what: "download"),
              let p = requireKey("path", in: d, of: node, what: "download") else { return (nil, nil) }
        let path = string(p).map { OutputPath(template: $0, location: location(p)) }
        let segments = d["segments"].flatMap { n in self.segments(n).map { ($0, location(n)) } }
        return (path, segments)
    }

    /// `from: titles.csv` or `from: {file: titles.csv, format: csv}`: the file relative to this one.
    func dataFile(_ node: Node) -> DataFileSource? {
        var fileNode = node
        var format: DataFile.Format?
        if case .mapping = node {
            guard let e = mapping(node, allowed: ["file", "format"], what: "from") else { return nil }
            guard let f = requireKey("file", in: e, of: node, what: "from") else { return nil }
            fileNode = f
            if let n = e["format"] { format = choice(n, DataFile.Format.self, what: "format") }
        }
        guard let path = string(fileNode, what: "a data file path") else { return nil }
        guard let format = format ?? DataFile.format(ofPath: path) else {
            error("invalid-value", "cannot tell the format of the data file '\(path)' from its name", at: fileNode,
                  hint: "name it .csv, .tsv, .jsonl or .txt (each also .gz), or give from: {file: …, format: csv}")
            return nil
        }
        let absolute = resolvePath(path)
        return DataFileSource(file: DataFile(displayPath: LoadSession.displayPath(absolute), path: absolute, format: format), location: location(fileNode))
    }

    static func isJobID(_ id: String) -> Bool {
        !id.isEmpty && id.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "_.-".unicodeScalars.contains($0))
        }
    }
}
