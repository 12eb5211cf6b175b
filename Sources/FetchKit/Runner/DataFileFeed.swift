import Foundation

/// A plan's data-file jobs, made one at a time as the run takes them: entry after entry, record
/// after record, this shard's only. A record that makes no job comes out as its failed result
/// (`invalid_record` or `path_escape`, naming `file:line:column`), and so does a data file that
/// can't be read on (`io`): the run reports them and goes on with the next.
final class DataFileFeed {
    enum Item {
        case job(ExpandedJob)
        case failed(JobResult)
        /// The next entry is a fan-out whose source jobs have not all finished: its records are not
        /// all there yet.
        case blocked
    }

    private var entries: ArraySlice<DataFileJobs>
    private var iterator: DataFileJobs.Iterator?
    private let shard: Shard?

    init(_ entries: [DataFileJobs], shard: Shard?) {
        self.entries = entries[...]
        self.shard = shard
    }

    var isEmpty: Bool { entries.isEmpty && iterator == nil }

    /// Whether `next` would give something other than `.blocked`.
    func canAdvance(results: (String) -> JobResult?) -> Bool {
        guard iterator == nil, let entry = entries.first else { return !isEmpty }
        return entry.waitsFor.allSatisfy { results($0) != nil }
    }

    /// - Parameter results: the result of a written-out job, nil while it has none: a fan-out's
    ///   records are read once its source jobs have results.
    func next(results: (String) -> JobResult?) -> Item? {
        while true {
            if iterator == nil {
                guard let entry = entries.first else { return nil }
                if !entry.waitsFor.isEmpty {
                    let sources = entry.waitsFor.map(results)
                    if sources.contains(where: { $0 == nil }) { return .blocked }
                    if let blocker = sources.compactMap({ $0 }).first(where: { !$0.isSuccess }) {
                        // No records to fan out over: the entry is skipped as a whole, as a job is.
                        entries.removeFirst()
                        return .failed(JobResult(job: "\(entry.id)[for_each]", outcome: .skipped,
                                                 reason: "needs \(blocker.job), which \(blocker.outcome == .skipped ? "was skipped" : "failed")"))
                    }
                }
                do {
                    iterator = try entry.makeIterator()
                } catch {
                    entries.removeFirst()
                    return failure(entry, error.message)
                }
            }
            guard let current = iterator, let entry = entries.first else { return nil }
            let item: DataFileJobs.Item?
            do {
                item = try current.next()
            } catch {
                iterator = nil
                entries.removeFirst()
                return failure(entry, error.message)
            }
            guard let item else {
                iterator = nil
                entries.removeFirst()
                continue
            }
            switch item {
            case .job(let job):
                if shard?.contains(job.id) ?? true { return .job(job) }
            case .invalid(let id, let problem):
                if shard?.contains(id) ?? true {
                    return .failed(JobResult(job: id, outcome: .failed,
                                             error: FetchError(problem.errorCode, "\(problem.location): \(problem.message)")))
                }
            }
        }
    }

    /// A data file that can't be read (on): one failed result for the entry, in every shard.
    private func failure(_ entry: DataFileJobs, _ message: String) -> Item {
        .failed(JobResult(job: "\(entry.id)[\(entry.file.displayPath)]", outcome: .failed, error: FetchError(.io, message)))
    }
}
