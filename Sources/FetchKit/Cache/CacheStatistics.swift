import Foundation

/// What `prune` or `clear` removed.
public struct CachePruneResult: Sendable, Equatable {
    public var entries = 0
    public var bytes: Int64 = 0
    /// Body and temporary files no entry named.
    public var orphans = 0
}

/// `fetchctl cache stats`.
public struct CacheStatistics: Sendable {
    public struct RunUse: Sendable {
        public var runID: String
        public var hits: Int
        public var revalidated: Int
        public var stale: Int
        public var misses: Int
        /// Responses served without a full download (hits, 304s and stale serves) over all lookups.
        public var hitRatio: Double {
            let total = hits + revalidated + stale + misses
            return total == 0 ? 0 : Double(hits + revalidated + stale) / Double(total)
        }
    }

    public var entries = 0
    public var bytes: Int64 = 0
    public var oldest: Date?
    public var lastRun: RunUse?
}

/// One entry as `fetchctl cache list` shows it.
public struct CacheListing: Sendable {
    public var method: String
    public var url: String
    public var status: Int
    public var bytes: Int64
    public var storedAt: Date
    public var usedAt: Date
    public var hits: Int
    public var headers: HTTPHeaders
    public var responseTime: Date
    public var requestTime: Date
    public var ttl: TimeInterval?
    /// A `HEAD` showed it out of date: revalidated before its next use.
    public var invalidated: Bool
}
