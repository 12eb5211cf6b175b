import Foundation

/// Expands a jobs file's `matrix` entries into jobs and checks what needs the whole file: routes
/// exist, params fit their routes, matrix keys are defined, `needs` resolve without cycles, and
/// output paths stay inside `output_dir` without two jobs writing one path.
struct JobExpander {
    let settings: Settings
    let routes: [String: CompiledRoute]
    var diagnostics: DiagnosticBag
    /// `output_dir`, standardized once.
    let outputRoot: String
    /// `normalize(outputRoot) == outputRoot`, so plain relative paths can be appended to it as they are.
    let rootIsNormal: Bool
    /// `outputRoot + "/"`: every output path starts with it.
    let outputPrefix: String
    /// Called once, with the first job made, unless an error was found before it (`ConfigLoader.onFirstJob`).
    var onFirstJob: ((ExpandedJob) -> Void)?

    init(settings: Settings, routes: [String: CompiledRoute], diagnostics: DiagnosticBag) {
        self.settings = settings
        self.routes = routes
        self.diagnostics = diagnostics
        outputRoot = FilePaths.standardized(settings.outputDir)
        rootIsNormal = outputRoot != "/" && Self.normalize(outputRoot) == outputRoot
        outputPrefix = outputRoot + "/"
    }

    /// The jobs written out (after `matrix` expansion) and the `from:` entries, whose jobs are made
    /// from their data files as the run goes.
    mutating func expand(_ specs: [JobSpec]) -> (jobs: [ExpandedJob], dataFileJobs: [DataFileJobs]) {
        var dataFileEntries: [ExpandedJob.Common] = []
        // Ids only, and expansions only for matrix entries (an entry without one expands to its own
        // id): at 100,000 jobs, a location per id and a one-element list per entry were 20 MB.
        var seenIDs: Set<String> = []
        var expanded: [ExpandedJob] = []
        var idsByBase: [String: [String]] = [:]
        // Sized up front: a 20,000-value matrix would otherwise regrow these a dozen times each.
        let total = specs.reduce(0) { $0 + ($1.from != nil ? 0 : $1.matrix.reduce(1) { $0 * max($1.values.count, 1) }) }
        expanded.reserveCapacity(total)
        var outputs: [String: String] = [:]
        outputs.reserveCapacity(total)
        let captureTable = Self.captureTable(specs)
        let entryIDs = captureTable.isEmpty ? [] : Set(specs.map(\.id))
        for spec in specs {
            guard seenIDs.insert(spec.id).inserted else {
                let first = specs.first { $0.id == spec.id }?.location
                diagnostics.error("duplicate-job", "job id '\(spec.id)' is used twice", at: spec.location, hint: first.map { "first used at \($0)" })
                continue
            }
            guard let route = resolveRoute(spec) else { continue }
            checkMatrixKeys(spec)
            let behaviour = spec.behaviour.merged(over: route.behaviour.merged(over: settings.behaviour))
            if route.download != nil, let save = spec.save {
                diagnostics.error("conflicting-keys", "route '\(route.name)' streams its response to disk; use 'download:' instead of 'save:'",
                                  at: save.location)
            }
            checkSegments(spec, route: route)
            let captureUses = captureUses(spec, table: captureTable, entries: entryIDs)
            let common = ExpandedJob.Common(spec: spec, route: route, behaviour: behaviour, captureUses: captureUses)
            checkJobPlaceholders(spec, route: route)
            checkPaginationOutputs(spec, pagination: common.pagination, route: route)
            if spec.from != nil || spec.forEach != nil {
                dataFileEntries.append(common)
                continue
            }
            // Parsed once per entry, rendered once per expansion.
            let save = spec.save.map { (Template($0.template), $0) }
            let download = spec.download.map { (Template($0.template), $0) }
            let saveHeaders = spec.saveHeaders.map { (Template($0.template), $0) }
            let saveItems = spec.saveItems.map { (Template($0.template), $0) }
            let pageContext: ParameterValue? = common.pagination == nil ? nil : .string("{{page}}")
            var placeholdersChecked = false
            // Made once per entry: a 20,000-value matrix built each of these per job.
            let contextKeys = spec.matrix.map { "matrix.\($0.key)" }
            var ids: [String] = []
            ids.reserveCapacity(spec.matrix.isEmpty ? 0 : total)
            for combination in Self.combinations(spec.matrix.map { ($0.key, $0.values) }) {
                let id = combination.isEmpty ? spec.id : Self.expandedID(spec.id, combination)
                // Grown as filled: `init(minimumCapacity:)` ran unspecialized, a metadata lookup each job.
                var values: [String: ParameterValue] = [:]
                for (index, pair) in combination.enumerated() { values[contextKeys[index]] = pair.value }
                let firstExpansion = !placeholdersChecked
                let params = bindParams(spec, route: route, matrix: values, checkPlaceholders: firstExpansion)
                placeholdersChecked = true
                // Params win over matrix values of the same name; without params the values are the context.
                var context = values.isEmpty ? params : params.isEmpty ? values : params.merging(values) { a, _ in a }
                // `{{page}}` stays in a paginated job's save path, filled in for each page.
                if let pageContext, context["page"] == nil { context["page"] = pageContext }
                let entry = firstExpansion ? spec.id : nil
                let savePath = save.flatMap { outputPath($0.0, $0.1, context: context, jobID: id, reportingFor: entry, outputs: &outputs) }
                let downloadPath = download.flatMap { outputPath($0.0, $0.1, context: context, jobID: id, reportingFor: entry, outputs: &outputs) }
                let headersPath = saveHeaders.flatMap { outputPath($0.0, $0.1, context: context, jobID: id, reportingFor: entry, outputs: &outputs) }
                let itemsPath = saveItems.flatMap { outputPath($0.0, $0.1, context: context, jobID: id, reportingFor: entry, outputs: &outputs) }
                // Made whole and appended as it is: a job made first and given its paths after was
                // copied into the plan (a retain and a release of each of its fields).
                expanded.append(ExpandedJob(id: id, matrix: combination, params: params, savePath: savePath, downloadPath: downloadPath,
                                            headersPath: headersPath, itemsPath: itemsPath, needs: [], common: common))
                if !combination.isEmpty { ids.append(id) }
                if let onFirstJob, let first = expanded.first {
                    if !diagnostics.hasErrors { onFirstJob(first) }
                    self.onFirstJob = nil
                }
            }
            if !ids.isEmpty { idsByBase[spec.id, default: []] += ids }
        }
        let dataFileIDs = Set(dataFileEntries.map(\.spec.id))
        let names = NeedNames(idsByBase: idsByBase, entries: seenIDs.subtracting(dataFileIDs))
        resolveNeeds(&expanded, names: names, dataFileIDs: dataFileIDs)
        let dataFileJobs = prepareDataFileJobs(dataFileEntries, jobs: expanded, names: names, outputs: outputs)
        return (expanded, dataFileJobs)
    }

    /// `id[key=value,key=value]`, built in one string (a map, a join and two concatenations made
    /// five strings a job of a 20,000-value matrix).
    static func expandedID(_ id: String, _ combination: [(key: String, value: ParameterValue)]) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(id.utf8.count + 2 + combination.reduce(0) { $0 + $1.key.utf8.count + 24 })
        UTF8Text.append(id, to: &bytes)
        bytes.append(UInt8(ascii: "["))
        for (index, pair) in combination.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            UTF8Text.append(pair.key, to: &bytes)
            bytes.append(UInt8(ascii: "="))
            // An integer's digits written in place: `text` made a string of them a job.
            if case .int(let number) = pair.value {
                UTF8Text.appendDecimal(Int64(number), to: &bytes)
            } else {
                UTF8Text.append(pair.value.text, to: &bytes)
            }
        }
        bytes.append(UInt8(ascii: "]"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Every combination of matrix values, in matrix order; one empty combination without a matrix.
    /// Each combination is one array, made at its final size (`prefix + [pair]` made two a job).
    static func combinations(_ matrix: [(String, [ParameterValue])]) -> [[(key: String, value: ParameterValue)]] {
        var result: [[(key: String, value: ParameterValue)]] = [[]]
        for (key, values) in matrix {
            result = result.flatMap { prefix in
                values.map { value in
                    var combination = prefix
                    combination.reserveCapacity(matrix.count)
                    combination.append((key, value))
                    return combination
                }
            }
        }
        return result
    }

    mutating func resolveRoute(_ spec: JobSpec) -> CompiledRoute? {
        switch spec.target {
        case .url(let url, let method, let request):
            return CompiledRoute(adHocName: spec.id, url: url, method: method, request: request)
        case .route(let name, let location):
            if let route = routes[name] { return route }
            let names = routes.keys.sorted()
            var hint = EditDistance.hint(for: name, among: names)
            if hint == nil, !name.contains(".") {
                let qualified = names.filter { $0.hasSuffix(".\(name)") }
                if qualified.count == 1 { hint = "did you mean '\(qualified[0])'?" }
            }
            if hint == nil, names.isEmpty { hint = "no routes are loaded; add the route file to 'include'" }
            diagnostics.error("unknown-route", "unknown route '\(name)'", at: location, hint: hint)
            return nil
        }
    }

    /// `download: {segments: N}`: ranges must be on, and only `per_host` connections open at once.
    mutating func checkSegments(_ spec: JobSpec, route: CompiledRoute) {
        guard let (count, location) = spec.downloadSegments, count > 1 else { return }
        if route.download?.resumable == false {
            diagnostics.error("conflicting-keys", "'segments: \(count)' needs range requests, which route '\(route.name)' turns off (resumable: false)",
                              at: location, hint: "remove 'segments', or let the route resume")
        } else if count > settings.perHost {
            diagnostics.warning("segments-limited", "only \(settings.perHost) connections to one host open at once (per_host), so \(settings.perHost) of the \(count) segments run at a time",
                                at: location, hint: "raise settings.per_host to \(count)")
        }
    }

    /// A paginated job saves each page (`{{page}}` in `save`) or the records (`save_items`, which
    /// needs `items`); an unpaginated job has no pages to number.
    mutating func checkPaginationOutputs(_ spec: JobSpec, pagination: Pagination?, route: CompiledRoute) {
        // Each record's job keeps its own cursor, under its id: a record number would hand one
        // record's cursor to another when the list's order changes.
        if let incremental = spec.incremental, spec.from != nil || spec.forEach != nil, spec.key == nil {
            diagnostics.error("missing-key", "job '\(spec.id)' keeps an incremental cursor for each of its records, under its id, and without 'key' the id is the record's position",
                              at: incremental.location, hint: "add key: with a value that names the record, e.g. key: \"{{\(spec.recordPrefix ?? "row.")id}}\"")
        }
        if let pagination {
            if let download = spec.download, spec.pagination == nil {
                diagnostics.error("conflicting-keys", "route '\(route.name)' pages through results (paginate), and job '\(spec.id)' downloads one file",
                                  at: download.location, hint: "add paginate: false to the job, or use save_items:")
            }
            if let save = spec.save, !Template(save.template).placeholders.contains("page") {
                diagnostics.error("pagination-save", "job '\(spec.id)' pages through results, and 'save' would write every page to one file",
                                  at: save.location, hint: "put {{page}} in the path (one file a page), or use save_items: to write the records as JSON Lines")
            }
            if let items = spec.saveItems, pagination.items == nil {
                diagnostics.error("missing-key", "'save_items' writes the records that paginate.items names, and job '\(spec.id)' has no 'items'",
                                  at: items.location, hint: "add items: \"$.path.to.records\" to the paginate block")
            }
        } else {
            if let items = spec.saveItems, spec.download == nil {
                diagnostics.error("missing-key", "'save_items' writes the records of every page, and job '\(spec.id)' does not paginate",
                                  at: items.location, hint: "add a paginate block to the job or its route '\(route.name)', or use save:")
            }
            for path in [spec.save, spec.download, spec.saveHeaders].compactMap({ $0 }) where Template(path.template).placeholders.contains("page") {
                if spec.params.contains(where: { $0.name == "page" }) { continue }
                diagnostics.error("undeclared-placeholder", "'{{page}}' numbers the pages of a paginated job, and job '\(spec.id)' does not paginate",
                                  at: path.location, hint: "add a paginate block to the job or its route '\(route.name)'")
            }
        }
    }

    /// Every `{{matrix.key}}` the job uses must be a key of its matrix.
    mutating func checkMatrixKeys(_ spec: JobSpec) {
        let defined = Set(spec.matrix.map(\.key))
        var uses: [(String, SourceLocation)] = []
        for param in spec.params { uses += Self.placeholders(in: param.value).map { ($0, param.location) } }
        for path in [spec.save, spec.download, spec.saveHeaders].compactMap({ $0 }) { uses += Template(path.template).placeholders.map { ($0, path.location) } }
        var templates = spec.behaviour.headers.compactMap(\.value)
        if case .url(let url, _, let request) = spec.target {
            templates.append(url)
            for value in [request.query, { if case .object(let v)? = request.parameters { return v } else { return nil } }()].compactMap({ $0 }) {
                uses += Self.placeholders(in: value).map { ($0, spec.location) }
            }
        }
        for template in templates { uses += Template(template).placeholders.map { ($0, spec.location) } }
        var used: Set<String> = []
        for (name, location) in uses where name.hasPrefix("matrix.") {
            let key = String(name.dropFirst("matrix.".count))
            used.insert(key)
            if !defined.contains(key) {
                let hint = EditDistance.suggestion(for: key, among: defined.sorted()).map { "did you mean '{{matrix.\($0)}}'?" }
                diagnostics.error("unknown-matrix-key", "'{{\(name)}}' is not defined in the matrix of job '\(spec.id)'", at: location,
                                  hint: hint ?? (defined.isEmpty ? "add it under matrix:" : "matrix keys: \(defined.sorted().joined(separator: ", "))"))
            }
        }
        for entry in spec.matrix where !used.contains(entry.key) {
            diagnostics.warning("unused-matrix-key", "matrix key '\(entry.key)' of job '\(spec.id)' is used nowhere", at: entry.location,
                                hint: "use it as {{matrix.\(entry.key)}} in params, save or download, or every expansion does the same work")
        }
    }

    static func placeholders(in value: ParameterValue) -> [String] {
        switch value {
        case .string(let s): return Template(s).placeholders
        case .array(let items): return items.flatMap(placeholders)
        case .object(let entries): return entries.flatMap { placeholders(in: $0.value) }
        default: return []
        }
    }

    /// The job's params with matrix values filled in, checked against the route; defaults added.
    /// `checkPlaceholders`: check an ad-hoc job's placeholders (the same for every expansion, so once).
    private mutating func bindParams(_ spec: JobSpec, route: CompiledRoute, matrix: [String: ParameterValue],
                                     checkPlaceholders: Bool) -> [String: ParameterValue] {
        var bound: [String: ParameterValue] = [:]
        // Made only for a job with params: a router copies the route, once per job of a matrix.
        let filler = spec.params.isEmpty ? nil : Router(route: route, params: matrix)
        for (name, raw, location, keyLocation) in spec.params {
            if case .string(let text) = raw, Template.mayContainPlaceholder(text), text.contains("{{jobs.") {
                // Filled in when the job starts, from the captures of the jobs before it.
                bound[name] = .string(Template(text).render { matrix[$0]?.text })
                if !route.isAdHoc, route.param(named: name) == nil {
                    diagnostics.error("unknown-param", "route '\(route.name)' has no param '\(name)'", at: keyLocation,
                                      hint: EditDistance.hint(for: name, among: route.params.map(\.name)))
                }
                continue
            }
            guard let value = filler?.substitute(raw) else { continue }
            if route.isAdHoc {
                bound[name] = value
                continue
            }
            guard let param = route.param(named: name) else {
                diagnostics.error("unknown-param", "route '\(route.name)' has no param '\(name)'", at: keyLocation,
                                  hint: EditDistance.hint(for: name, among: route.params.map(\.name))
                                    ?? "its params: \(route.params.map(\.name).joined(separator: ", "))")
                continue
            }
            switch ParamChecker.check(value, against: param) {
            case .success(let coerced): bound[name] = coerced
            case .failure(let problem): diagnostics.error("invalid-param", "param '\(name)' \(problem.message)", at: location)
            }
        }
        if case .route(_, let location) = spec.target {
            for param in route.params where bound[param.name] == nil && !spec.params.contains(where: { $0.name == param.name }) {
                if let value = param.defaultValue {
                    bound[param.name] = value
                } else if param.required {
                    diagnostics.error("missing-param", "job '\(spec.id)' is missing required param '\(param.name)' of route '\(route.name)'",
                                      at: location, hint: "add it under params:")
                }
            }
        } else if checkPlaceholders {
            checkAdHocPlaceholders(spec, route: route, known: Set(bound.keys).union(matrix.keys))
        }
        return bound
    }

    mutating func checkAdHocPlaceholders(_ spec: JobSpec, route: CompiledRoute, known: Set<String>) {
        var names = Template(route.urlTemplate).placeholders + spec.behaviour.headers.compactMap(\.value).flatMap { Template($0).placeholders }
        for value in [route.request.query, { if case .object(let v)? = route.request.parameters { return v } else { return nil } }()].compactMap({ $0 }) {
            names += Self.placeholders(in: value)
        }
        for name in names where !known.contains(name) && !name.hasPrefix("matrix.") && !name.hasPrefix("jobs.") && spec.recordPrefix.map(name.hasPrefix) != true {
            diagnostics.error("undeclared-placeholder", "'{{\(name)}}' in job '\(spec.id)' is not one of its params", at: spec.location,
                              hint: "add it under params:")
        }
    }

    /// Renders a `save`/`download` template and checks it stays inside `output_dir` and is unique.
    /// Placeholders that name nothing are reported for the entry `reportingFor` (its first expansion
    /// only, as they are the same for every one).
    private mutating func outputPath(_ template: Template, _ path: OutputPath, context: [String: ParameterValue], jobID: String,
                                     reportingFor entry: String?, outputs: inout [String: String]) -> String? {
        var unknown: [String] = []
        let rendered = template.render { name in
            guard let value = context[name] else { unknown.append(name); return nil }
            return value.text
        }
        if !unknown.isEmpty {
            // An unknown `matrix.` key is reported by `checkMatrixKeys`.
            if let entry {
                for name in unknown where !name.hasPrefix("matrix.") && !name.hasPrefix("jobs.") && name != "page" {
                    diagnostics.error("undeclared-placeholder", "'{{\(name)}}' in the output path of job '\(entry)' is not one of its params",
                                      at: path.location, hint: "add it under params:, or take it from the matrix as {{matrix.\(name)}}")
                }
            }
            return nil
        }
        // A plain relative path under a normal root is inside it by construction: no prefix to compare.
        let plain = rootIsNormal && Self.isPlainRelative(rendered)
        let normalized = plain ? outputPrefix + rendered : Self.normalize(rendered.hasPrefix("/") ? rendered : outputPrefix + rendered)
        guard plain || (!rendered.isEmpty && normalized.hasPrefix(outputPrefix)) else {
            diagnostics.error("path-escapes-output", "output path '\(rendered)' of job '\(jobID)' is outside output_dir", at: path.location,
                              hint: "use a relative path without '..' that stays inside \(SourceFileDisplay.path(outputRoot))")
            return nil
        }
        // One hash of the path, not two: a clash puts the first job back.
        if let other = outputs.updateValue(jobID, forKey: normalized) {
            outputs[normalized] = other
            diagnostics.error("duplicate-output", "jobs '\(other)' and '\(jobID)' both write '\(rendered)'", at: path.location,
                              hint: "give each job its own path, e.g. with {{matrix.key}}")
            return nil
        }
        return normalized
    }

    /// True for a relative path with no empty, `.` or `..` segment (nor any segment starting with a
    /// dot), which `normalize` would leave as it is: the common case, checked without splitting.
    static func isPlainRelative(_ path: String) -> Bool {
        var previous = UInt8(ascii: "/")
        for byte in path.utf8 {
            if previous == UInt8(ascii: "/"), byte == UInt8(ascii: "/") || byte == UInt8(ascii: ".") { return false }
            previous = byte
        }
        return previous != UInt8(ascii: "/")
    }

    /// Resolves `.` and `..` lexically (the file need not exist).
    static func normalize(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            if part == "." || part.isEmpty { continue }
            if part == "..", !parts.isEmpty { parts.removeLast(); continue }
            if part == ".." { continue }
            parts.append(part)
        }
        // Appended part by part: `[Substring].joined` ran unspecialized, and its first call
        // resolved its witnesses at run time (about 230,000 instructions a process).
        var normalized = ""
        normalized.reserveCapacity(path.utf8.count + 1)
        for part in parts {
            normalized += "/"
            normalized.append(contentsOf: part)
        }
        return normalized.isEmpty ? "/" : normalized
    }

    /// What a `needs:` entry may name: the id of a `jobs:` entry (not a data file's), which stands
    /// for all its expansions (`idsByBase`, kept for matrix entries only), or one expanded id.
    struct NeedNames {
        var idsByBase: [String: [String]]
        var entries: Set<String>

        func hint(for name: String) -> String? { EditDistance.hint(for: name, among: entries.sorted()) }
    }

    /// Expands `needs` to job ids and reports unknown names and cycles.
    private mutating func resolveNeeds(_ jobs: inout [ExpandedJob], names: NeedNames, dataFileIDs: Set<String>) {
        guard jobs.contains(where: { !$0.spec.needs.isEmpty || !$0.common.captureUses.isEmpty }) else { return }
        let allIDs = Set(jobs.map(\.id))
        for index in jobs.indices {
            // Using a capture waits for the job that captures it.
            var needs: [String] = []
            for use in jobs[index].common.captureUses where !needs.contains(use.job) { needs.append(use.job) }
            for (name, location) in jobs[index].spec.needs {
                if let ids = names.idsByBase[name] {
                    needs += ids
                } else if allIDs.contains(name) {
                    needs.append(name)
                } else if dataFileIDs.contains(name) {
                    diagnostics.error("needs-data-file-jobs", "job '\(jobs[index].spec.id)' needs '\(name)', whose jobs come from a data file",
                                      at: location, hint: "a job can't wait for a data file's jobs; run it in a second jobs file after this one")
                } else {
                    diagnostics.error("unknown-need", "job '\(jobs[index].spec.id)' needs unknown job '\(name)'", at: location,
                                      hint: names.hint(for: name))
                }
            }
            jobs[index].needs = needs
        }
        guard jobs.contains(where: { !$0.needs.isEmpty }) else { return }
        // Depth-first search for cycles; each cycle is reported once, at the need that closes it.
        var indexByID: [String: Int] = [:]
        for (index, job) in jobs.enumerated() where indexByID[job.id] == nil { indexByID[job.id] = index }
        var state: [String: Int] = [:]  // 1 visiting, 2 done
        var reported: Set<String> = []
        func visit(_ id: String, path: [String]) {
            state[id] = 1
            for need in indexByID[id].map({ jobs[$0].needs }) ?? [] {
                if state[need] == 1 {
                    let cycle = Array(path.drop { $0 != need }) + [id, need]
                    // Expansions of one matrix job close the same cycle: report it once.
                    let key = Set(cycle.compactMap { indexByID[$0].map { jobs[$0].spec.id } }).sorted().joined(separator: ",")
                    if reported.insert(key).inserted, let index = indexByID[id] {
                        // A need written out, or one a capture implies (reported at the job).
                        let location = jobs[index].spec.needs.first(where: { names.idsByBase[$0.id]?.contains(need) == true || $0.id == need })?.location
                            ?? jobs[index].spec.location
                        diagnostics.error("needs-cycle", "needs cycle: \(cycle.joined(separator: " → "))", at: location,
                                          hint: "a job cannot wait for itself; remove one of these needs")
                    }
                } else if state[need] == nil {
                    visit(need, path: path + [id])
                }
            }
            state[id] = 2
        }
        for job in jobs where state[job.id] == nil { visit(job.id, path: []) }
    }
}

/// Paths for messages: relative to the working directory when below it.
enum SourceFileDisplay {
    static func path(_ absolute: String) -> String { LoadSession.displayPath(absolute) }
}
