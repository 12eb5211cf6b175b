/// The jobs a run will do, in file order: all of them, or those `--job` names plus everything they
/// need. A name may be an expanded id (`commits[repo=Moya]`) or a matrix job's id (all of its
/// combinations).
public struct RunPlan: Sendable {
    public var jobs: [ExpandedJob]

    public init(config: LoadedConfig, selecting selection: [String] = []) throws(PlanError) {
        guard !selection.isEmpty else {
            jobs = config.jobs
            return
        }
        var wanted: Set<String> = []
        var queue: [String] = []
        for name in selection {
            let matches = config.jobs.filter { $0.id == name || $0.spec.id == name }
            guard !matches.isEmpty else {
                let names = Set(config.jobs.map(\.id) + config.jobs.map(\.spec.id))
                let hint = EditDistance.hint(for: name, among: names.sorted()).map { " (\($0))" } ?? ""
                throw PlanError(message: "no job '\(name)' in the jobs file\(hint)")
            }
            queue += matches.map(\.id)
        }
        let byID = Dictionary(config.jobs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        while let id = queue.popLast() {
            guard wanted.insert(id).inserted, let job = byID[id] else { continue }
            queue += job.needs
        }
        jobs = config.jobs.filter { wanted.contains($0.id) }
    }
}

/// A `--job` that names no job.
public struct PlanError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
