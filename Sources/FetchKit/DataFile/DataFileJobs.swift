import Foundation

/// The jobs of one `from:` entry: one per record of its data file (times its `matrix`, when it has
/// one), made one at a time as they are taken, so a million-record file never sits in memory.
///
/// Each record is checked as its job is made, with what `validate` checks for jobs written out in
/// YAML: the columns the entry uses exist, params fit their route, the key is unique, the output path
/// stays inside `output_dir` and is no other job's. A record that fails is reported at its place in
/// the data file (`titles.csv:1234:7`): by `validate` as a diagnostic, by `run` as a failed job.
/// Uniqueness is checked by 64-bit hashes of ids and paths, so a million records cost 16 MB, not
/// the strings.
public final class DataFileJobs: Sendable {
    public let file: DataFile
    let common: ExpandedJob.Common
    let source: SourceLocation
    /// Expanded ids of the (YAML) jobs every job of this entry needs.
    let needs: [String]
    /// A fan-out's jobs whose responses make its records: the records are read once they finished.
    let waitsFor: [String]
    /// `row.` for a data file, `<as>.` for a fan-out.
    let prefix: String
    public var forEach: ForEachSpec? { common.spec.forEach }
    let key: Template?
    let save: Template?
    let download: Template?
    let saveHeaders: Template?
    let saveItems: Template?
    /// The ids and output paths of the jobs written out in YAML, which no record may take.
    let takenIDs: Set<String>
    let takenOutputs: [String: String]
    let outputPrefix: String
    let rootIsNormal: Bool
    /// Every column or key a template names (`row.title` → `title`), checked on every record.
    let usedNames: [String]

    public var spec: JobSpec { common.spec }
    public var id: String { common.spec.id }

    init(common: ExpandedJob.Common, file: DataFile, source: SourceLocation, needs: [String], waitsFor: [String] = [], takenIDs: Set<String>,
         takenOutputs: [String: String], outputPrefix: String, rootIsNormal: Bool, usedNames: [String]) {
        self.common = common
        self.file = file
        self.source = source
        self.needs = needs
        self.waitsFor = waitsFor
        let spec = common.spec
        prefix = spec.recordPrefix ?? "row."
        key = spec.key.map { Template($0.template) }
        save = spec.save.map { Template($0.template) }
        download = spec.download.map { Template($0.template) }
        saveHeaders = spec.saveHeaders.map { Template($0.template) }
        saveItems = spec.saveItems.map { Template($0.template) }
        self.takenIDs = takenIDs
        self.takenOutputs = takenOutputs
        self.outputPrefix = outputPrefix
        self.rootIsNormal = rootIsNormal
        self.usedNames = usedNames
    }

    /// One problem with one record: where, a kebab-case code for `validate`, and the run-time code.
    public struct Problem: Error, Sendable {
        public var location: SourceLocation
        public var code: String
        public var message: String
        /// `path_escape` for an output path outside `output_dir`, `invalid_record` otherwise.
        public var errorCode: FetchError.Code

        public var diagnostic: Diagnostic { Diagnostic(.error, code: code, message, at: location) }
    }

    public enum Item: Sendable {
        case job(ExpandedJob)
        /// A record that makes no job: its id (when it has one) and why.
        case invalid(id: String, Problem)
    }

    /// The number of jobs the file will make: its records (times the matrix's combinations),
    /// counted without reading them (see `DataRecordReader.count`).
    public func count() throws(DataFileError) -> Int {
        if let known = recordCount.withLock({ $0 }) { return known * max(1, combinations.count) }
        let counted = try DataRecordReader.count(file)
        recordCount.withLock { $0 = counted }
        return counted * max(1, combinations.count)
    }

    var combinations: [[(key: String, value: ParameterValue)]] {
        JobExpander.combinations(spec.matrix.map { ($0.key, $0.values) })
    }

    /// - Parameter remembersLines: `validate`: check keys and output paths both, and say on which
    ///   line a duplicate was first seen. A run keeps only 64-bit hashes, sized for the file's
    ///   record count, of the output paths (two records writing one file is what would lose data;
    ///   a key used twice in a file that has output paths is left to `validate`), or of the ids when
    ///   the entry writes no file: one table, about 9 MB per million records.
    public func makeIterator(remembersLines: Bool = false) throws(DataFileError) -> Iterator {
        try Iterator(self, remembersLines: remembersLines)
    }

    /// The record count, counted once (`count()`, without the matrix) for sizing the run's table.
    private let recordCount = LockedBox<Int?>(nil)

    func records() -> Int {
        if let known = recordCount.withLock({ $0 }) { return known }
        let counted = (try? DataRecordReader.count(file)) ?? 0
        recordCount.withLock { $0 = counted }
        return counted
    }

    /// Hashes seen so far: with the line each was first seen on (validate), or only the hashes.
    struct Seen {
        private var lines: [UInt64: Int32]?
        private var hashes: HashSet64?

        /// `enabled` false: nothing is checked (every insert succeeds).
        init(remembersLines: Bool, enabled: Bool, expected: @autoclosure () -> Int) {
            if remembersLines {
                lines = [:]
            } else if enabled {
                hashes = HashSet64(expected: expected())
            }
        }

        /// Records `hash` seen on `line`; returns false (and the first line, when remembered) when it was seen before.
        mutating func insert(_ hash: UInt64, line: Int) -> (inserted: Bool, firstLine: Int?) {
            if lines != nil {
                if let first = lines![hash] { return (false, Int(first)) }
                lines![hash] = Int32(truncatingIfNeeded: line)
                return (true, nil)
            }
            if hashes != nil { return (hashes!.insert(hash), nil) }
            return (true, nil)
        }
    }

    /// Reads the file and makes its jobs, in file order.
    public final class Iterator {
        let entry: DataFileJobs
        let reader: DataRecordReader
        let combinations: [[(key: String, value: ParameterValue)]]
        private var queued: [Item] = []
        private var seenIDs: Seen
        private var seenOutputs: Seen
        /// `row.number` (with the entry's prefix), made once.
        private let numberKey: String
        /// A CSV or TSV file's columns as context keys (`row.title`) with the column each is read
        /// from (the first of a repeated name), made once.
        private let columnKeys: [(key: String, index: Int)]
        /// Each name a template takes from the record, with its column (nil when there is none).
        private let usedColumns: [(name: String, index: Int?)]

        init(_ entry: DataFileJobs, remembersLines: Bool) throws(DataFileError) {
            self.entry = entry
            let writes = entry.save != nil || entry.download != nil || entry.saveHeaders != nil || entry.saveItems != nil
            let jobs = { entry.records() * max(1, entry.spec.matrix.reduce(1) { $0 * $1.values.count }) }
            let paths = [entry.save, entry.download, entry.saveHeaders, entry.saveItems].compactMap { $0 }.count
            seenIDs = Seen(remembersLines: remembersLines, enabled: !writes, expected: jobs())
            seenOutputs = Seen(remembersLines: remembersLines, enabled: writes, expected: jobs() * paths)
            reader = try DataRecordReader(entry.file)
            combinations = entry.combinations
            numberKey = entry.prefix + "number"
            let firstIndex = reader.header?.firstIndex ?? [:]
            columnKeys = firstIndex.map { (entry.prefix + $0.key, $0.value) }.sorted { $0.index < $1.index }
            usedColumns = entry.usedNames.map { ($0, firstIndex[$0]) }
        }

        /// The next job or invalid record; nil at the end of the file. Throws when the file can't
        /// be read on.
        public func next() throws(DataFileError) -> Item? {
            while queued.isEmpty {
                guard let read = try reader.next() else { return nil }
                switch read {
                case .failure(let problem):
                    let location = SourceLocation(file: entry.file.displayPath, line: problem.line, column: problem.column)
                    return .invalid(id: "\(entry.id)[#\(reader.file.displayPath):\(problem.line)]",
                                    Problem(location: location, code: "invalid-record", message: problem.message, errorCode: .invalidRecord))
                case .success(let record):
                    // One job a record (no matrix), the usual case: no queue.
                    if combinations.count == 1 { return make(record, combinations[0]) }
                    for combination in combinations { queued.append(make(record, combination)) }
                }
            }
            return queued.removeFirst()
        }

        private func location(_ record: DataRecord, _ name: String?) -> SourceLocation {
            let position: (line: Int, column: Int) = name.map { record.position(of: $0) } ?? (record.line, 1)
            return SourceLocation(file: entry.file.displayPath, line: position.line, column: position.column)
        }

        private func make(_ record: DataRecord, _ combination: [(key: String, value: ParameterValue)]) -> Item {
            var context: [String: ParameterValue] = [:]
            let prefix = entry.prefix
            let missing: String?
            if let row = record.row, row.header === reader.header {
                // A CSV or TSV row, read by column with the keys made once.
                context.reserveCapacity(columnKeys.count + combination.count + 1)
                for (key, index) in columnKeys where index < row.fields.count { context[key] = .string(row.fields[index]) }
                missing = usedColumns.first { name, index in name != "number" && (index.map { $0 >= row.fields.count } ?? true) }?.name
            } else {
                let values = record.values
                context.reserveCapacity(values.count + combination.count + 1)
                for (name, value) in values { context[prefix + name] = value }
                missing = entry.usedNames.first { values[$0] == nil && $0 != "number" }
            }
            if context[numberKey] == nil { context[numberKey] = .int(record.number) }
            for (key, value) in combination { context["matrix." + key] = value }
            // Made only for a record that makes no job (most make one).
            func fallbackID() -> String { "\(entry.id)[\(record.number)]" }
            if let missing {
                return .invalid(id: fallbackID(), Problem(location: location(record, nil), code: "missing-column",
                                                          message: "the record has no '\(missing)'", errorCode: .invalidRecord))
            }
            // The id: `page[<key>]`, matrix values after the key.
            let key = entry.key.map { $0.render { context[$0]?.text } } ?? String(record.number)
            let suffix = combination.isEmpty ? key : ([key] + combination.map { "\($0.key)=\($0.value.text)" }).joined(separator: ",")
            let id = "\(entry.id)[\(suffix)]"
            var keyName: String? { entry.key.flatMap { Self.rowName(in: $0, prefix: prefix) } }
            if key.isEmpty {
                return .invalid(id: fallbackID(), Problem(location: location(record, keyName), code: "invalid-record",
                                                        message: "the record's key is empty (job '\(entry.id)')", errorCode: .invalidRecord))
            }
            if entry.takenIDs.contains(id) {
                return .invalid(id: id, Problem(location: location(record, keyName), code: "duplicate-key",
                                                message: "job id '\(id)' is also a job of the jobs file", errorCode: .invalidRecord))
            }
            let seenID = seenIDs.insert(Self.hash(id), line: record.line)
            if !seenID.inserted {
                let first = seenID.firstLine.map { " (first on line \($0))" } ?? ""
                return .invalid(id: fallbackID(), Problem(location: location(record, keyName), code: "duplicate-key",
                                                          message: "the key '\(key)' is used twice\(first): job '\(id)'",
                                                        errorCode: .invalidRecord))
            }
            // Params, filled in and checked against the route.
            var params: [String: ParameterValue] = [:]
            let filler = entry.spec.params.isEmpty ? nil : Router(route: entry.common.route, params: context)
            for (name, raw, _, _) in entry.spec.params {
                if !entry.common.captureUses.isEmpty, case .string(let text) = raw, text.contains("{{jobs.") {
                    // A capture: filled in (and checked against the param) when the job starts.
                    params[name] = .string(Template(text).render { context[$0]?.text })
                    continue
                }
                guard let value = filler?.substitute(raw) else { continue }
                guard !entry.common.route.isAdHoc, let param = entry.common.route.param(named: name) else {
                    params[name] = value
                    continue
                }
                switch ParamChecker.check(value, against: param) {
                case .success(let coerced): params[name] = coerced
                case .failure(let problem):
                    let column = JobExpander.placeholders(in: raw).first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
                    return .invalid(id: id, Problem(location: location(record, column), code: "invalid-param",
                                                    message: "param '\(name)' \(problem.message) (job '\(id)')", errorCode: .invalidRecord))
                }
            }
            if !entry.common.route.isAdHoc {
                for param in entry.common.route.params where params[param.name] == nil {
                    if let value = param.defaultValue { params[param.name] = value }
                }
            }
            var job = ExpandedJob(id: id, matrix: combination, params: params, savePath: nil, downloadPath: nil, needs: entry.needs,
                                  common: entry.common)
            var outputContext = params.isEmpty ? context : params.merging(context) { a, _ in a }
            job.bindings = context
            // `{{page}}` stays in a paginated job's save path, filled in for each page.
            if entry.common.pagination != nil, outputContext["page"] == nil { outputContext["page"] = .string("{{page}}") }
            func path(_ template: Template?) -> Result<String?, Problem> {
                guard let template else { return .success(nil) }
                return output(template, context: outputContext, record: record, id: id).map { $0 }
            }
            do throws(Problem) {
                job.savePath = try path(entry.save).get()
                job.downloadPath = try path(entry.download).get()
                job.headersPath = try path(entry.saveHeaders).get()
                job.itemsPath = try path(entry.saveItems).get()
            } catch {
                return .invalid(id: id, error)
            }
            return .job(job)
        }

        private func output(_ template: Template, context: [String: ParameterValue], record: DataRecord, id: String) -> Result<String, Problem> {
            let rendered = template.render { context[$0]?.text ?? "" }
            var column: String? { Self.rowName(in: template, prefix: entry.prefix) }  // for a problem's location
            let normalized = entry.rootIsNormal && JobExpander.isPlainRelative(rendered) ? entry.outputPrefix + rendered
                : JobExpander.normalize(rendered.hasPrefix("/") ? rendered : entry.outputPrefix + rendered)
            guard !rendered.isEmpty, normalized.hasPrefix(entry.outputPrefix) else {
                return .failure(Problem(location: location(record, column), code: "path-escapes-output",
                                        message: "output path '\(rendered)' of job '\(id)' is outside output_dir", errorCode: .pathEscape))
            }
            if let other = entry.takenOutputs[normalized] {
                return .failure(Problem(location: location(record, column), code: "duplicate-output",
                                        message: "jobs '\(other)' and '\(id)' both write '\(rendered)'", errorCode: .invalidRecord))
            }
            let seenOutput = seenOutputs.insert(Self.hash(normalized), line: record.line)
            if !seenOutput.inserted {
                let first = seenOutput.firstLine.map { "the record on line \($0)" } ?? "an earlier record"
                return .failure(Problem(location: location(record, column), code: "duplicate-output",
                                        message: "job '\(id)' writes '\(rendered)', as \(first) does", errorCode: .invalidRecord))
            }
            return .success(normalized)
        }

        /// The first column a template takes from the record (`{{row.title}}` → `title`).
        static func rowName(in template: Template, prefix: String = "row.") -> String? {
            template.placeholders.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        }

        /// FNV-1a, 64 bits: ids and paths are told apart by this alone (a collision, about one in
        /// 10¹³ for a million records, reports a false duplicate, never a silent overwrite).
        static func hash(_ text: String) -> UInt64 { FNV1a.hash(text) }
    }
}
