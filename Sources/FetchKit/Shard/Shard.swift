import Foundation

/// One shard of a batch, `index` of `count` (1-based, as Jest and Playwright spell `--shard 2/8`):
/// the jobs whose stable hash falls to it. Every shard of a batch sees the whole plan and keeps the
/// same jobs whatever the others do, so N processes (Kubernetes pods, CI matrix entries) share a
/// batch without talking to each other.
///
/// A job goes with everything it is connected to through `needs` (both ways): the group is placed by
/// the hash of its smallest job id, so a job never waits for another shard. Adding a job moves no
/// other job, unless its `needs` join two groups (then the merged group goes where its smallest id
/// hashes). The hash is FNV-1a 64 of the id's UTF-8 with MurmurHash3's finalizer: the same on every
/// machine and in every version.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// 1-based.
    public var index: Int
    public var count: Int

    public init(index: Int, count: Int) throws(ShardError) {
        guard count >= 1, (1...count).contains(index) else {
            throw ShardError(message: "shard \(index)/\(count): the index must be from 1 to the count (1-based, as in --shard 1/4)")
        }
        self.index = index
        self.count = count
    }

    public var description: String { "\(index)/\(count)" }

    /// `I/N` (1-based), or `index-env=VAR/N` with VAR holding a 0-based index (a Kubernetes Indexed
    /// Job's `JOB_COMPLETION_INDEX`).
    public init(parsing text: String, environment: [String: String] = ProcessEnvironment.variables()) throws(ShardError) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2, let count = Int(parts[1]) else {
            throw ShardError(message: "--shard takes I/N (e.g. 2/8) or index-env=VAR/N, got '\(text)'")
        }
        if parts[0].hasPrefix("index-env=") {
            let name = String(parts[0].dropFirst("index-env=".count))
            guard let value = environment[name] else {
                throw ShardError(message: "--shard \(text): the environment variable \(name) is not set")
            }
            guard let zeroBased = Int(value.trimmingCharacters(in: .whitespaces)) else {
                throw ShardError(message: "--shard \(text): \(name) is '\(value)', not a number")
            }
            try self.init(index: zeroBased + 1, count: count)
        } else {
            guard let index = Int(parts[0]) else {
                throw ShardError(message: "--shard takes I/N (e.g. 2/8) or index-env=VAR/N, got '\(text)'")
            }
            try self.init(index: index, count: count)
        }
    }

    /// The jobs of `jobs` that are this shard's, in plan order.
    public func select(_ jobs: [ExpandedJob]) -> [ExpandedJob] {
        guard count > 1 else { return jobs }
        let anchors = Self.anchors(jobs)
        return jobs.filter { Self.shard(of: anchors[$0.id] ?? $0.id, count: count) == index }
    }

    /// Whether a job without `needs` links (a data file's job) is this shard's.
    public func contains(_ id: String) -> Bool {
        count <= 1 || Self.shard(of: id, count: count) == index
    }

    /// 1-based shard of a group anchored at `id`.
    static func shard(of id: String, count: Int) -> Int {
        // FNV-1a's low bits follow the last bytes closely (ids ending alike would bunch up in a
        // shard): MurmurHash3's 64-bit finalizer mixes every bit into every other first.
        let hash = BloomFilter64.mix(FNV1a.hash(id))
        return Int(hash % UInt64(count)) + 1
    }

    /// Each job's group anchor: the smallest id among the jobs joined to it through `needs`
    /// (union-find). Jobs without `needs` links are their own anchors and cost nothing here.
    static func anchors(_ jobs: [ExpandedJob]) -> [String: String] {
        var parent: [String: String] = [:]
        func root(_ id: String) -> String {
            var top = id
            while let next = parent[top], next != top { top = next }
            // Path compression: long needs chains stay linear.
            var walk = id
            while let next = parent[walk], next != top {
                parent[walk] = top
                walk = next
            }
            return top
        }
        for job in jobs where !job.needs.isEmpty {
            for need in job.needs {
                let a = root(job.id), b = root(need)
                if a != b {
                    // The smaller id stays the root, so the anchor is the group's smallest id.
                    if a < b { parent[b] = a } else { parent[a] = b }
                }
            }
        }
        var anchors: [String: String] = [:]
        for id in parent.keys { anchors[id] = root(id) }
        return anchors
    }
}

/// A `--shard` that can't be used.
public struct ShardError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
