/// Placeholders in every field a job writes itself, and captures (`{{jobs.<id>.<name>}}`): each
/// must name something the job has when it runs, and a capture makes the job wait for its job.
extension JobExpander {
    /// Every `{{…}}` in the job's own templated fields: params, headers, auth, and for an ad-hoc
    /// job its URL, query, parameters and body text. (Output paths are checked where they are made.)
    static func jobPlaceholders(_ spec: JobSpec) -> [(name: String, location: SourceLocation)] {
        var uses: [(String, SourceLocation)] = []
        for param in spec.params { uses += placeholders(in: param.value).map { ($0, param.location) } }
        for header in spec.behaviour.headers { if let value = header.value { uses += Template(value).placeholders.map { ($0, spec.location) } } }
        switch spec.behaviour.auth {
        case .bearer(let token)?: uses += Template(token).placeholders.map { ($0, spec.location) }
        case .basic(let user, let password)?: uses += (Template(user).placeholders + Template(password).placeholders).map { ($0, spec.location) }
        case .header(_, let value)?: uses += Template(value).placeholders.map { ($0, spec.location) }
        case .oauth2?, .none?, nil: break
        }
        if case .url(let url, _, let request) = spec.target {
            uses += Template(url).placeholders.map { ($0, spec.location) }
            for value in [request.query, { if case .object(let v)? = request.parameters { return v } else { return nil } }()].compactMap({ $0 }) {
                uses += placeholders(in: value).map { ($0, spec.location) }
            }
            if case .text(let text)? = request.body?.source { uses += Template(text).placeholders.map { ($0, spec.location) } }
        }
        return uses
    }

    /// What entries capture, by entry id: the names, and whether the entry is one job (a matrix
    /// or a data file makes many, and `{{jobs.<id>.…}}` could not say which).
    static func captureTable(_ specs: [JobSpec]) -> [String: (names: [String], single: Bool)] {
        var table: [String: (names: [String], single: Bool)] = [:]
        for spec in specs where !spec.captures.isEmpty && table[spec.id] == nil {
            table[spec.id] = (spec.captures.map(\.name), spec.matrix.isEmpty && spec.from == nil)
        }
        return table
    }

    /// The captures the job uses, checked: `{{jobs.<id>.<name>}}` must name an entry of one job
    /// that captures `name`. Returns the uses and the entries the job must wait for.
    mutating func captureUses(_ spec: JobSpec, table: [String: (names: [String], single: Bool)], entries: Set<String>)
        -> [CaptureUse] {
        var uses: [CaptureUse] = []
        var all = Self.jobPlaceholders(spec)
        for path in [spec.save, spec.download, spec.saveHeaders, spec.saveItems, spec.key].compactMap({ $0 }) {
            for name in Template(path.template).placeholders where name.hasPrefix("jobs.") {
                diagnostics.error("capture-in-output-path", "'{{\(name)}}' in an output path: output paths are fixed before any job runs", at: path.location,
                                  hint: "use captures in params, headers, auth, the URL or the body")
            }
        }
        all.removeAll { !$0.name.hasPrefix("jobs.") }
        for (name, location) in all {
            let pieces = name.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard pieces.count == 3, !pieces[1].isEmpty, !pieces[2].isEmpty else {
                diagnostics.error("unknown-capture", "'{{\(name)}}' should name a job and one of its captures", at: location,
                                  hint: "write {{jobs.<job id>.<capture name>}}")
                continue
            }
            let (job, capture) = (pieces[1], pieces[2])
            guard let captured = table[job] else {
                if entries.contains(job) {
                    diagnostics.error("unknown-capture", "'{{\(name)}}': job '\(job)' captures nothing", at: location,
                                      hint: "add capture: {\(capture): {json: \"$.…\"}} to job '\(job)'")
                } else {
                    diagnostics.error("unknown-capture", "'{{\(name)}}': no job '\(job)' in the jobs file", at: location,
                                      hint: EditDistance.hint(for: job, among: table.keys.sorted()))
                }
                continue
            }
            guard captured.names.contains(capture) else {
                diagnostics.error("unknown-capture", "'{{\(name)}}': job '\(job)' has no capture '\(capture)'", at: location,
                                  hint: EditDistance.hint(for: capture, among: captured.names) ?? "its captures: \(captured.names.joined(separator: ", "))")
                continue
            }
            guard captured.single else {
                diagnostics.error("unknown-capture", "'{{\(name)}}': job '\(job)' is a matrix or data-file entry of many jobs, so which one's '\(capture)' is meant is unclear",
                                  at: location, hint: "capture from a job without matrix or from")
                continue
            }
            guard job != spec.id else {
                diagnostics.error("needs-cycle", "job '\(job)' uses its own capture '{{\(name)}}'", at: location, hint: "a capture is known only after the job ran")
                continue
            }
            if !uses.contains(where: { $0.placeholder == name }) { uses.append(CaptureUse(placeholder: name, job: job, name: capture)) }
        }
        return uses
    }
}

extension JobExpander {
    /// The fields the other checks don't see: a route job's headers and auth, an ad-hoc job's auth
    /// and body text. Their placeholders must name a param (the route's, or the job's own for an
    /// ad-hoc job), a matrix key, a data file's column (`row.`) or a capture (`jobs.`).
    mutating func checkJobPlaceholders(_ spec: JobSpec, route: CompiledRoute) {
        var fields: [String] = []
        switch spec.behaviour.auth {
        case .bearer(let token)?: fields.append(token)
        case .basic(let user, let password)?: fields += [user, password]
        case .header(_, let value)?: fields.append(value)
        case .oauth2?, .none?, nil: break
        }
        if case .url(_, _, let request) = spec.target {
            if case .text(let text)? = request.body?.source { fields.append(text) }
        } else {
            fields += spec.behaviour.headers.compactMap(\.value)
        }
        var known = Set(spec.params.map(\.name))
        if !route.isAdHoc { known.formUnion(route.params.map(\.name)) }
        var reported: Set<String> = []
        for name in fields.flatMap({ Template($0).placeholders }) where !known.contains(name) && reported.insert(name).inserted {
            if name.hasPrefix("matrix.") || name.hasPrefix("jobs.") || spec.recordPrefix.map(name.hasPrefix) == true { continue }
            let hint = route.isAdHoc ? "add it under params:" : EditDistance.hint(for: name, among: Array(known).sorted())
                ?? "route '\(route.name)' has the params: \(route.params.map(\.name).joined(separator: ", "))"
            diagnostics.error("undeclared-placeholder", "'{{\(name)}}' in job '\(spec.id)' is not one of its params", at: spec.location, hint: hint)
        }
    }
}

/// One `{{jobs.<job>.<name>}}` a job uses.
public struct CaptureUse: Sendable, Equatable {
    public var placeholder: String
    public var job: String
    public var name: String
}
