import Foundation

/// The load-time checks of `from:` entries: what can be known before any record is read (the file
/// opens, its header has the columns the entry uses, params name route params, `needs` resolve). Each
/// record is checked as its job is made (`DataFileJobs`).
extension JobExpander {
    mutating func prepareDataFileJobs(_ entries: [ExpandedJob.Common], jobs: [ExpandedJob], names: NeedNames,
                                      outputs: [String: String]) -> [DataFileJobs] {
        guard !entries.isEmpty else { return [] }
        let takenIDs = Set(jobs.map(\.id))
        var prepared: [DataFileJobs] = []
        for common in entries {
            let spec = common.spec
            let uses = rowPlaceholders(spec)
            let from: DataFileSource
            var waitsFor: [String] = []
            var columns: [String]?
            if let forEach = spec.forEach {
                // A fan-out reads the records its job's responses held, spooled as JSON Lines.
                guard let sources = fanOutSources(forEach, spec: spec, jobs: takenIDs, names: names, dataFileIDs: Set(entries.map(\.spec.id))) else { continue }
                if let source = jobs.first(where: { $0.spec.id == forEach.job }), source.spec.download != nil {
                    diagnostics.error("conflicting-keys", "job '\(spec.id)' fans out over '\(forEach.job)', which downloads a file: its body goes to disk, not to the fan-out",
                                      at: forEach.jobLocation, hint: "fan out over a job that saves or pages through JSON")
                    continue
                }
                waitsFor = sources
                from = DataFileSource(file: DataFile(displayPath: "for_each \(forEach.job)", path: FanOutSpool.path(stateDir: settings.stateDir, entry: spec.id),
                                                     format: .jsonl), location: forEach.location)
            } else {
                guard let source = spec.from else { continue }
                from = source
                // The header (CSV, TSV) or the one name a text file has: every column used must be in it.
                do {
                    columns = try DataRecordReader(from.file).columns
                } catch {
                    diagnostics.error("unreadable-data-file", error.message, at: from.location)
                    continue
                }
            }
            var usable = true
            if let columns, from.file.format == .csv || from.file.format == .tsv {
                // A header naming a column twice (the first wins), or leaving one unnamed.
                var seen: Set<String> = []
                for name in columns where !seen.insert(name).inserted {
                    diagnostics.warning("duplicate-column", "the data file '\(from.file.displayPath)' names the column '\(name)' twice; {{row.\(name)}} is the first",
                                        at: from.location, hint: "rename one in the header row")
                }
                if columns.contains("") {
                    diagnostics.warning("unnamed-column", "the data file '\(from.file.displayPath)' has a column without a name in its header row",
                                        at: from.location, hint: "its values can't be used; name it, or remove the column")
                }
            }
            if let columns {
                for (name, location) in uses where !columns.contains(name) && name != "number" {
                    usable = false
                    let hint = EditDistance.suggestion(for: name, among: columns).map { "did you mean '{{row.\($0)}}'?" }
                        ?? "its columns: \(columns.joined(separator: ", "))"
                    diagnostics.error("unknown-column", "'{{row.\(name)}}': the data file '\(from.file.displayPath)' has no column '\(name)'",
                                      at: location, hint: hint)
                }
            }
            if case .route(_, let location) = spec.target {
                for (name, _, _, keyLocation) in spec.params where common.route.param(named: name) == nil {
                    usable = false
                    diagnostics.error("unknown-param", "route '\(common.route.name)' has no param '\(name)'", at: keyLocation,
                                      hint: EditDistance.hint(for: name, among: common.route.params.map(\.name))
                                        ?? "its params: \(common.route.params.map(\.name).joined(separator: ", "))")
                }
                for param in common.route.params where param.required && param.defaultValue == nil && !spec.params.contains(where: { $0.name == param.name }) {
                    usable = false
                    diagnostics.error("missing-param", "job '\(spec.id)' is missing required param '\(param.name)' of route '\(common.route.name)'",
                                      at: location, hint: "add it under params:, e.g. \(param.name): \"{{row.\(param.name)}}\"")
                }
            } else {
                var known = Set(spec.params.map(\.name))
                for entry in spec.matrix { known.insert("matrix.\(entry.key)") }
                checkAdHocPlaceholders(spec, route: common.route, known: known)
            }
            checkOutputPlaceholders(spec)
            var needs: [String] = []
            for (name, location) in spec.needs {
                if let ids = names.idsByBase[name] {
                    needs += ids
                } else if takenIDs.contains(name) {
                    needs.append(name)
                } else {
                    usable = false
                    let isDataFile = entries.contains { $0.spec.id == name }
                    diagnostics.error(isDataFile ? "needs-data-file-jobs" : "unknown-need",
                                      isDataFile ? "job '\(spec.id)' needs '\(name)', whose jobs come from a data file"
                                        : "job '\(spec.id)' needs unknown job '\(name)'", at: location,
                                      hint: isDataFile ? "a job can't wait for a data file's jobs; run it in a second jobs file after this one"
                                        : names.hint(for: name))
                }
            }
            for use in common.captureUses where !needs.contains(use.job) { needs.append(use.job) }
            for id in waitsFor where !needs.contains(id) { needs.append(id) }
            guard usable else { continue }
            prepared.append(DataFileJobs(common: common, file: from.file, source: from.location, needs: needs, waitsFor: waitsFor, takenIDs: takenIDs,
                                         takenOutputs: outputs, outputPrefix: outputPrefix, rootIsNormal: rootIsNormal,
                                         usedNames: Array(Set(uses.map(\.name))).sorted()))
        }
        return prepared
    }

    /// Every `{{row.<name>}}` the entry uses, with where it is written.
    private func rowPlaceholders(_ spec: JobSpec) -> [(name: String, location: SourceLocation)] {
        let prefix = spec.recordPrefix ?? "row."
        var uses: [(String, SourceLocation)] = []
        func add(_ names: [String], _ location: SourceLocation) {
            for name in names where name.hasPrefix(prefix) { uses.append((String(name.dropFirst(prefix.count)), location)) }
        }
        for param in spec.params { add(Self.placeholders(in: param.value), param.location) }
        for path in [spec.save, spec.download, spec.saveHeaders, spec.saveItems, spec.key].compactMap({ $0 }) {
            add(Template(path.template).placeholders, path.location)
        }
        for header in spec.behaviour.headers { if let value = header.value { add(Template(value).placeholders, spec.location) } }
        if case .url(let url, _, let request) = spec.target {
            add(Template(url).placeholders, spec.location)
            for value in [request.query, { if case .object(let v)? = request.parameters { return v } else { return nil } }()].compactMap({ $0 }) {
                add(Self.placeholders(in: value), spec.location)
            }
        }
        return uses
    }

    /// Output paths and the key may use params, `matrix.` and `row.` values, nothing else.
    private mutating func checkOutputPlaceholders(_ spec: JobSpec) {
        let params = Set(spec.params.map(\.name))
        for path in [spec.save, spec.download, spec.saveHeaders, spec.saveItems, spec.key].compactMap({ $0 }) {
            for name in Template(path.template).placeholders where !name.hasPrefix(spec.recordPrefix ?? "row.") && !name.hasPrefix("matrix.") && !params.contains(name) {
                if name == "page" { continue }  // reported by checkPaginationOutputs when the job doesn't paginate
                diagnostics.error("undeclared-placeholder", "'{{\(name)}}' in job '\(spec.id)' is not one of its params", at: path.location,
                                  hint: "take it from the record as {{\(spec.recordPrefix ?? "row.")\(name)}}, or add it under params:")
            }
        }
    }

    /// The job ids a fan-out reads from: its `for_each.job`, a written-out entry (every expansion
    /// of a matrix entry); nil after reporting when it names none.
    private mutating func fanOutSources(_ forEach: ForEachSpec, spec: JobSpec, jobs: Set<String>, names: NeedNames,
                                        dataFileIDs: Set<String>) -> [String]? {
        if let ids = names.idsByBase[forEach.job] { return ids }
        if jobs.contains(forEach.job) {
            guard forEach.job != spec.id else { return nil }
            return [forEach.job]
        }
        if dataFileIDs.contains(forEach.job) {
            diagnostics.error("needs-data-file-jobs", "job '\(spec.id)' fans out over '\(forEach.job)', whose jobs come from a data file or a fan-out",
                              at: forEach.jobLocation, hint: "fan out over a job written out in the jobs file")
        } else {
            diagnostics.error("unknown-need", "job '\(spec.id)' fans out over unknown job '\(forEach.job)'", at: forEach.jobLocation,
                              hint: names.hint(for: forEach.job))
        }
        return nil
    }
}
