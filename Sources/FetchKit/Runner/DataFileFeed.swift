import Foundation

/// A plan's data-file jobs, made one at a time as the run takes them: entry after entry, record
/// after record, this shard's only. A record that makes no job comes out as its failed result
/// (`invalid_record` or `path_escape`, naming `file:line:column`), and so does a data file that
/// can't be read on (`io`): the run reports them and goes on with the next.
final class DataFileFeed {
    enum Item {
        case job(ExpandedJob)
        case failed(JobResult)
    }

    private var entries: ArraySlice<DataFileJobs>
    private var iterator: DataFileJobs.Iterator?
    private let shard: Shard?

    init(_ entries: [DataFileJobs], shard: Shard?) {
        self.entries = entries[...]
        self.shard = shard
    }

    var isEmpty: Bool { entries.isEmpty && iterator == nil }

    func next() -> Item? {
        while true {
            if iterator == nil {
                guard let entry = entries.first else { return nil }
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
