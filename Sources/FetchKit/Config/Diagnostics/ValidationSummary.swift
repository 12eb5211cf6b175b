/// The closing line of `fetchctl validate`: `2 errors, 1 warning in 3 files` or `ok: 3 files, 12 routes, 40 jobs`.
public struct ValidationSummary: Sendable {
    public let text: String

    /// - Parameter dataFileJobs: the jobs the data files make (their records read by
    ///   `checkDataFiles`), counted with the written-out ones.
    public init(config: LoadedConfig, fileCount: Int, dataFileJobs: Int = 0) {
        let errors = config.diagnostics.count { $0.severity == .error }
        let warnings = config.diagnostics.count { $0.severity == .warning }
        let files = Self.plural(config.sources.count, "file")
        if errors == 0 && warnings == 0 {
            let dataFiles = config.dataFileJobs.count { $0.forEach == nil }
            let fanOuts = config.dataFileJobs.count - dataFiles
            text = "ok: \(files), \(Self.plural(config.routes.count, "route")), \(Self.plural(config.jobs.count + dataFileJobs, "job"))"
                + (dataFiles == 0 ? "" : " (\(dataFileJobs) from \(Self.plural(dataFiles, "data file")))")
                + (fanOuts == 0 ? "" : ", and \(Self.plural(fanOuts, "fan-out")) made as \(fanOuts == 1 ? "its job runs" : "their jobs run")")
        } else {
            text = "\(Self.plural(errors, "error")), \(Self.plural(warnings, "warning")) in \(files)"
        }
    }

    static func plural(_ n: Int, _ word: String) -> String { "\(n) \(word)\(n == 1 ? "" : "s")" }
}
