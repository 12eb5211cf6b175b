import NIOCore

/// Ready jobs `JobQueue` passed over because their host already had `per_host` jobs running,
/// queued by host in the order they were passed over. Taking the next job for one host touches
/// only that host's queue: a worker that just freed a slot asks for its own host's next job, and a
/// scan of every job set aside (copying each) cost more than the wake-up it saves.
struct JobsAside {
    struct Entry {
        /// When it was set aside, for taking the longest waiting first across hosts.
        var order: Int
        var job: ExpandedJob
        /// Its index in the plan's written-out jobs; nil for a data file's job.
        var planIndex: Int?
    }

    private var byHost: [JobHost.Key: CircularBuffer<Entry>] = [:]
    private var nextOrder = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func add(_ job: consuming ExpandedJob, planIndex: Int?, host: JobHost.Key) {
        nextOrder += 1
        byHost[host, default: CircularBuffer()].append(Entry(order: nextOrder, job: job, planIndex: planIndex))
        count += 1
    }

    /// The longest waiting job for `host`, if any.
    mutating func take(for host: JobHost.Key) -> Entry? {
        guard count > 0, let index = byHost.index(forKey: host) else { return nil }
        let entry = byHost.values[index].popFirst()
        if byHost.values[index].isEmpty { byHost.remove(at: index) }
        if entry != nil { count -= 1 }
        return entry
    }

    /// The longest waiting job among the hosts `hasRoom` says have room; when none has, the
    /// longest waiting of all if `orOldest`.
    mutating func takeFirst(where hasRoom: (JobHost.Key) -> Bool, orOldest: Bool) -> (host: JobHost.Key, entry: Entry)? {
        var roomy: (host: JobHost.Key, order: Int)?
        var oldest: (host: JobHost.Key, order: Int)?
        for (host, queue) in byHost {
            guard let order = queue.first?.order else { continue }
            if order < oldest?.order ?? .max { oldest = (host, order) }
            if order < roomy?.order ?? .max, hasRoom(host) { roomy = (host, order) }
        }
        guard let chosen = roomy ?? (orOldest ? oldest : nil), let entry = take(for: chosen.host) else { return nil }
        return (chosen.host, entry)
    }

    /// Every job set aside, longest waiting first, leaving none.
    mutating func removeAll() -> [Entry] {
        let entries = byHost.values.flatMap { $0 }.sorted { $0.order < $1.order }
        byHost.removeAll()
        count = 0
        return entries
    }
}
