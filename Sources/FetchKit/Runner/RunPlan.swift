/// The jobs a run will do, in file order: all of them, or those `--job` names plus everything they
/// need. A name may be an expanded id (`commits[repo=Moya]`), a matrix job's id (all of its
/// combinations) or a `from:` entry's id (all of its data file's jobs).
///
/// The jobs written out in the jobs file are here (`jobs`); a data file's jobs are made as the run
/// takes them (`dataFileJobs`), after the written-out ones in the order the run starts jobs.
public struct RunPlan: Sendable {
    public var jobs: [ExpandedJob]
    public var dataFileJobs: [DataFileJobs]
    /// `--shard`: only this shard's data-file jobs are run (the written-out jobs are selected when
    /// it is applied).
    public private(set) var shard: Shard?

    public init(config: LoadedConfig, selecting selection: [String] = []) throws(PlanError) {
        guard !selection.isEmpty else {
            jobs = config.jobs
            dataFileJobs = config.dataFileJobs
            return
        }
        var wanted: Set<String> = []
        var queue: [String] = []
        var entries: [DataFileJobs] = []
        for name in selection {
            if let entry = config.dataFileJobs.first(where: { $0.id == name }) {
                if !entries.contains(where: { $0 === entry }) { entries.append(entry) }
                queue += entry.needs
                continue
            }
            let matches = config.jobs.filter { $0.id == name || $0.spec.id == name }
            guard !matches.isEmpty else {
                let names = Set(config.jobs.map(\.id) + config.jobs.map(\.spec.id) + config.dataFileJobs.map(\.id))
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
        dataFileJobs = config.dataFileJobs.filter { entry in entries.contains { $0 === entry } }
    }

    /// Keeps this shard's jobs: the written-out jobs by their groups (`Shard.select`), each data
    /// file's jobs by their ids. The jobs a data file's jobs need (and what those need) run in every
    /// shard, since every shard has some of the data file's jobs.
    public mutating func apply(_ shard: Shard) {
        self.shard = shard
        guard shard.count > 1 else { return }
        var needed: Set<String> = []
        var queue = dataFileJobs.flatMap(\.needs)
        let byID = Dictionary(jobs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        while let id = queue.popLast() {
            guard needed.insert(id).inserted, let job = byID[id] else { continue }
            queue += job.needs
        }
        let selected = Set(shard.select(jobs).map(\.id))
        jobs = jobs.filter { selected.contains($0.id) || needed.contains($0.id) }
    }

    /// The jobs the plan will make: the written-out ones and every data file's (counted without
    /// reading the records; a file that can't be read counts as none here and fails in the run).
    /// With a shard, a data file's jobs are counted as their share (which are this shard's is known
    /// only once they are made): the count the run announces and its progress counts down from.
    public var jobCountEstimate: Int {
        let fromFiles = dataFileJobs.reduce(0) { $0 + ((try? $1.count()) ?? 0) }
        return jobs.count + (fromFiles + (shard?.count ?? 1) / 2) / (shard?.count ?? 1)
    }
}

/// A `--job` that names no job.
public struct PlanError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
