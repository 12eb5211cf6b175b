import Foundation
import Yams

/// Loads route and jobs files into a `LoadedConfig`: parses YAML keeping locations, follows
/// `include`s, layers behaviour, expands `matrix`, and checks everything SPEC §2 says can be checked
/// without the network. Problems are collected, never thrown.
public struct ConfigLoader: Sendable {
    public var environment: [String: String]
    public var mode: InterpolationMode
    /// Called with the jobs file's settings once they are read, before its jobs are expanded and
    /// checked (`fetchctl run` starts opening its state directory meanwhile). Not a promise that
    /// the config is valid: `load` may still return errors.
    public var onJobsFileSettings: (@Sendable (Settings) -> Void)?
    /// Called with the jobs file's first job as soon as it is made, before the others are expanded
    /// and checked (`fetchctl run` opens its connection meanwhile: `EarlyTransport`). Not called
    /// when an error was found before it; like `onJobsFileSettings`, not a promise that the config is valid.
    public var onFirstJob: (@Sendable (ExpandedJob) -> Void)?

    public init(environment: [String: String] = ProcessEnvironment.variables(), mode: InterpolationMode) {
        self.environment = environment
        self.mode = mode
    }

    static let topKeys = ["version", "service", "base_url", "description", "defaults", "routes", "include", "settings", "jobs"]

    /// Loads `paths` (route files, jobs files, or both in one) and everything they include.
    public func load(_ paths: [String]) -> LoadedConfig {
        var session = LoadSession(interpolator: EnvironmentInterpolator(environment: environment, marksUnset: mode == .plan), mode: mode)
        session.onJobsFileSettings = onJobsFileSettings
        session.onFirstJob = onFirstJob
        for path in paths {
            session.loadRoot(path)
        }
        return session.finish()
    }
}

/// The state of one `load` call: files read so far and what they held.
struct LoadSession {
    let interpolator: EnvironmentInterpolator
    let mode: InterpolationMode
    var diagnostics = DiagnosticBag()
    var config = LoadedConfig()
    /// Parsed files by absolute path (nil when unreadable or not YAML).
    var parsed: [String: ParsedFile?] = [:]
    var expandedRoots: Set<String> = []
    var onJobsFileSettings: (@Sendable (Settings) -> Void)?
    /// `onJobsFileSettings` was called: it is called once, as soon as the jobs file's `settings:`
    /// is composed (before its jobs are read), or else once the file is.
    var settingsAnnounced = false
    var onFirstJob: (@Sendable (ExpandedJob) -> Void)?

    struct ParsedFile {
        var source: SourceFile
        var routeFile: RouteFile?
        var settings: Settings?
        var jobs: [JobSpec]?
        /// Included files (absolute paths) with the node naming each, for cycle reports.
        var includes: [(path: String, location: SourceLocation)]
    }

    init(interpolator: EnvironmentInterpolator, mode: InterpolationMode) {
        self.interpolator = interpolator
        self.mode = mode
    }

    static func absolute(_ path: String, relativeTo directory: String? = nil) -> String {
        let base = directory ?? FileManager.default.currentDirectoryPath
        let full = path.hasPrefix("/") ? path : (base as NSString).appendingPathComponent(path)
        return FilePaths.standardized(full)
    }

    mutating func loadRoot(_ path: String) {
        let absolute = Self.absolute(path)
        guard let root = parse(path: path, absolute: absolute, includedAt: nil) else { return }
        var visible: [RouteFile] = []
        var seen: Set<String> = []
        collectRoutes(absolute, stack: [], visible: &visible, seen: &seen)
        register(routeFiles: visible)
        // Every root's jobs are checked; the first jobs file is the one a run executes.
        if let jobs = root.jobs, !expandedRoots.contains(absolute) {
            expandedRoots.insert(absolute)
            let settings = root.settings ?? defaultSettings(for: root.source)
            if config.jobsFile == nil, !diagnostics.hasErrors, !settingsAnnounced {
                settingsAnnounced = true
                onJobsFileSettings?(settings)
            }
            var expander = JobExpander(settings: settings, routes: visibleRoutes(visible), diagnostics: diagnostics)
            if config.jobsFile == nil {
                expander.onFirstJob = onFirstJob
                onFirstJob = nil
            }
            let expanded = expander.expand(jobs)
            diagnostics = expander.diagnostics
            if config.jobsFile == nil {
                config.jobsFile = JobsFile(path: root.source.path, settings: settings, jobs: jobs)
                config.jobs = expanded.jobs
                config.dataFileJobs = expanded.dataFileJobs
                if jobs.contains(where: { $0.captures.contains(where: \.secret) }) { config.learntSecrets = SecretValues() }
            }
        }
    }

    func defaultSettings(for source: SourceFile) -> Settings {
        let dir = (source.absolutePath as NSString).deletingLastPathComponent
        return Settings(outputDir: Self.absolute("out", relativeTo: dir), stateDir: Self.absolute(".fetchctl", relativeTo: dir))
    }

    /// Reads and parses one file once; later requests for the same file reuse the result.
    mutating func parse(path: String, absolute: String, includedAt: SourceLocation?) -> ParsedFile? {
        if let cached = parsed[absolute] { return cached }
        parsed[absolute] = .some(nil)
        guard let data = FileManager.default.contents(atPath: absolute), let text = String(data: data, encoding: .utf8) else {
            let exists = FileManager.default.fileExists(atPath: absolute)
            let message = exists ? "cannot read '\(path)'" : "no such file '\(path)'"
            if let includedAt {
                let problem = exists ? "cannot be read" : "does not exist"
                diagnostics.error("missing-include", "included file '\(path)' \(problem)", at: includedAt)
            } else {
                diagnostics.error("unreadable-file", message, at: SourceLocation(file: path, line: 1, column: 1))
            }
            return nil
        }
        let source = SourceFile(path: path, absolutePath: absolute, text: text)
        config.sources.append(source)
        // Jobs are read as the file is composed, so the whole tree of a long jobs list never exists.
        var reader = ConfigReader(file: source, interpolator: interpolator, mode: mode, diagnostics: diagnostics)
        var streamedJobs: [JobSpec] = []
        let root: Node?
        var streamed = false
        // The first root file's `settings:`, announced as soon as it is composed: `fetchctl run`
        // opens its state directory while the jobs are read (a 2,000-value matrix took 2 ms to
        // compose, and the opening had waited for it). Read by a reader of its own, whose findings
        // are dropped: the settings are read again, with the file, for their diagnostics.
        let announces = includedAt == nil && onJobsFileSettings != nil && config.jobsFile == nil && !settingsAnnounced
            && !diagnostics.hasErrors
        if let composed = StreamingComposer(text: text, resolver: .basic).compose(onJob: { [reader] node in
            if let job = reader.job(node) { streamedJobs.append(job) }
        }, onTopLevel: { key, node in
            guard announces, key == "settings", !settingsAnnounced else { return }
            let scratch = ConfigReader(file: source, interpolator: interpolator, mode: mode, diagnostics: DiagnosticBag())
            let settings = scratch.settings(node)
            guard !scratch.diagnostics.hasErrors else { return }
            settingsAnnounced = true
            onJobsFileSettings?(settings)
        }) {
            (root, streamed) = composed
        } else {
            // A YAML error: Yams composes the file again to report it (the reader's findings so far are dropped).
            reader = ConfigReader(file: source, interpolator: interpolator, mode: mode, diagnostics: diagnostics)
            do {
                // The basic resolver types nothing (no regex per scalar); ConfigReader types plain scalars itself.
                root = try Yams.compose(yaml: text, .basic)
            } catch {
                diagnostics.append(YAMLErrorDiagnostic.make(error, file: path))
                return nil
            }
        }
        guard let root else {
            diagnostics.error("missing-key", "the file is empty; it needs at least 'version: 1'",
                              at: SourceLocation(file: path, line: 1, column: 1))
            return nil
        }
        let result = read(root, reader: reader, streamedJobs: streamed ? streamedJobs : nil)
        diagnostics = reader.diagnostics
        config.secrets.formUnion(reader.secrets)
        parsed[absolute] = .some(result)
        return result
    }

    /// `streamedJobs`: the `jobs:` list, already read as the file was composed (its node is then empty).
    private func read(_ root: Node, reader: ConfigReader, streamedJobs: [JobSpec]?) -> ParsedFile {
        var file = ParsedFile(source: reader.file, includes: [])
        guard let top = reader.mapping(root, allowed: ConfigLoader.topKeys, what: "the file") else { return file }
        if let v = reader.requireKey("version", in: top, of: root, what: "the file") {
            if let version = reader.int(v), version != 1 {
                reader.error("unsupported-version", "unsupported version \(version); this fetchctl reads version 1", at: v)
            }
        }
        if top["routes"] != nil {
            file.routeFile = reader.routeFile(top, root: root)
        } else {
            for key in ["service", "base_url", "defaults"] {
                if let k = top.keyNode(key) {
                    reader.warning("unused-key", "'\(key)' has no effect in a file without routes", at: k)
                }
            }
        }
        if let n = top["include"], let items = reader.sequence(n, what: "include") {
            for item in items {
                guard let path = reader.string(item, what: "a file path") else { continue }
                file.includes.append((reader.resolvePath(path), reader.location(item)))
            }
        }
        if top["jobs"] != nil || top["settings"] != nil {
            file.settings = reader.settings(top["settings"])
            file.jobs = top["jobs"].map { streamedJobs ?? reader.jobs($0) } ?? []
        }
        if top["routes"] == nil, top["jobs"] == nil, top["include"] == nil {
            reader.warning("empty-config", "the file has no routes and no jobs", at: root)
        }
        return file
    }

    /// Route files reachable from `absolute` through includes, each once, reporting cycles.
    mutating func collectRoutes(_ absolute: String, stack: [String], visible: inout [RouteFile], seen: inout Set<String>) {
        guard let file = parsed[absolute] ?? nil else { return }
        if seen.insert(absolute).inserted, let routeFile = file.routeFile { visible.append(routeFile) }
        for include in file.includes {
            if include.path == absolute || stack.contains(include.path) {
                let chain = (stack + [absolute, include.path]).map { ($0 as NSString).lastPathComponent }.joined(separator: " → ")
                diagnostics.error("include-cycle", "include cycle: \(chain)", at: include.location)
                continue
            }
            let display = Self.displayPath(include.path)
            guard parse(path: display, absolute: include.path, includedAt: include.location) != nil else { continue }
            collectRoutes(include.path, stack: stack + [absolute], visible: &visible, seen: &seen)
        }
    }

    /// A path relative to the working directory when it is below it, else absolute.
    static func displayPath(_ absolute: String) -> String {
        let cwd = FileManager.default.currentDirectoryPath
        return absolute.hasPrefix(cwd + "/") ? String(absolute.dropFirst(cwd.count + 1)) : absolute
    }

    /// Compiles the routes of `files` into the config, reporting a route defined in two files.
    mutating func register(routeFiles files: [RouteFile]) {
        for file in files where !config.routeFiles.contains(where: { $0.path == file.path }) {
            config.routeFiles.append(file)
            for spec in file.routes {
                if let existing = config.routes[spec.qualifiedName], existing.spec?.location != spec.location {
                    diagnostics.error("duplicate-route", "route '\(spec.qualifiedName)' is defined twice", at: spec.location,
                                      hint: existing.spec.map { "first defined at \($0.location)" })
                    continue
                }
                config.routes[spec.qualifiedName] = CompiledRoute(spec: spec, file: file)
            }
            for case .header(let name, _)? in [file.defaults.auth] + file.routes.map(\.behaviour.auth) {
                config.secretHeaders.insert(name.lowercased())
            }
        }
    }

    func visibleRoutes(_ files: [RouteFile]) -> [String: CompiledRoute] {
        var result: [String: CompiledRoute] = [:]
        for file in files {
            for spec in file.routes where result[spec.qualifiedName] == nil {
                result[spec.qualifiedName] = config.routes[spec.qualifiedName]
            }
        }
        return result
    }

    mutating func finish() -> LoadedConfig {
        for job in config.jobsFile?.jobs ?? [] {
            if case .header(let name, _)? = job.behaviour.auth { config.secretHeaders.insert(name.lowercased()) }
        }
        if case .header(let name, _)? = config.jobsFile?.settings.behaviour.auth { config.secretHeaders.insert(name.lowercased()) }
        // A message may quote a value that came from a secret-named ${VAR}: hide it here, once every
        // file has been read and every secret is known.
        let redactor = config.redactor
        config.diagnostics = diagnostics.sorted.map { diagnostic in
            var d = diagnostic
            d.message = redactor.redact(d.message)
            d.hint = d.hint.map(redactor.redact)
            return d
        }
        return config
    }
}
