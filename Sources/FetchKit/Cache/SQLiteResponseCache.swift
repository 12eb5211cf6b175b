import Foundation
import GRDB
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// The default `ResponseCache`: an SQLite index (`index.sqlite`, through GRDB, WAL, a busy timeout,
/// every write through GRDB's one writer) and the bodies as files under `bodies/`, in one directory
/// (`state_dir/cache` unless `settings.cache.dir` says otherwise). Several processes may share it.
///
/// Crash safety: a body is written to `tmp/`, renamed into `bodies/` and only then is its index row
/// committed, so a `kill -9` at any moment leaves at worst an orphan file (removed by `prune`),
/// never a row without its body. A row whose body is missing or has another size is a miss and is
/// removed. Nothing secret is written: rows are keyed by a SHA-256 of the URL and of the varying
/// request header values; the URL kept for `fetchctl cache list` is redacted.
///
/// Problems (a corrupt index, a directory that is not writable, a full disk) go to `onProblem`
/// once each and the entry concerned is skipped; a cache never fails a request.
///
/// ```swift
/// let cache = try SQLiteResponseCache(directory: "/var/cache/myapp")
/// let session = Session(cache: cache)
/// var options = RequestOptions()
/// options.cache = RequestCacheOptions(staleIfError: .seconds(86_400))
/// let first = try await session.data("https://api.example.com/items", options: options)   // first.response.cache == .miss
/// let again = try await session.data("https://api.example.com/items", options: options)   // .hit while fresh
/// await cache.finishRun(id: "nightly", maxSize: 1 << 30)                                   // LRU pruning, stats
/// try await session.shutdown()
/// ```
public final class SQLiteResponseCache: ResponseCache {
    public let directory: String
    /// Stores return once their body is in place and their rows are committed together every 100 ms or 8,192 rows
    /// (and before an invalidation, and at `finishRun`), as the state store gathers job results: a
    /// batch of thousands of jobs then costs a few commits and no wake-up of its own per response.
    /// A lookup of a URL whose row is still waiting commits the batch first; a `kill -9` loses at
    /// most the last 100 ms of rows (their bodies become orphans that `prune` removes). Off by default: a
    /// library's next request expects to find what the previous one stored; `fetchctl run` turns it on.
    public let batchesStores: Bool
    let pool: StoreConnections
    /// Read-only connections for lookups, one per event loop (see `lookupRows`).
    let lookups: CacheLookupConnections
    /// The index's columns, which differ only in an index made by an older fetchctl and opened
    /// read-only (not migrated).
    private let schema: SQLiteCacheRows.Schema
    private let redact: @Sendable (String) -> String
    private let onProblem: @Sendable (CacheProblem) -> Void
    let state = LockedBox(State())

    /// Output directories known to be (or not) on the cache's file system, and the last of them
    /// asked about. A lock of their own: every stored response asks, and under `state` the
    /// question waited for the rows' hand-off and the writer's batches.
    private struct FileSystems {
        var same: [String: Bool] = [:]
        var last: (path: String, same: Bool)?
    }
    private let fileSystems = LockedBox(FileSystems())

    struct State {
        /// Entries served since the last `finishRun`, for `used_at` and `hits` (written in one transaction).
        var served: [Int64: Int] = [:]
        /// Requests by cache use, indexed by `RequestMetrics.CacheUse.index` (not a dictionary: this
        /// runs for every request, see `RunTally`).
        var counts = [Int](repeating: 0, count: RequestMetrics.CacheUse.allCases.count)
        var reported: Set<String> = []
        /// Rows whose bodies are in place, waiting for the writer, with the stores waiting on them.
        var pending: [(row: PendingRow, done: CheckedContinuation<Void, Never>)] = []
        var writing = false
        /// The index held no entry when opened: only URLs this process stored since (`storedURLs`)
        /// need a query (or a digest); a cold run's thousands of misses cost nothing. Another
        /// process sharing the directory may store meanwhile; this process then misses what it
        /// stored, which is allowed.
        var empty = false
        /// The URLs this process stored while `empty`: exactly while they are few, then as a Bloom
        /// filter of fixed size (a wrong "maybe" only costs a lookup or a look for a body to
        /// replace; a million URLs don't grow it).
        var storedURLs = StoredHashFilter()
        /// With `batchesStores`: rows gathered for the next timed commit.
        var deferred: [PendingRow] = []
        /// The timer that commits a batch `commitInterval` after its first row: what a `kill -9`
        /// can lose (tests lengthen it to see the open transaction).
        var flushTimer: Task<Void, Never>?
        var commitInterval: Duration = .milliseconds(100)
        /// URLs with a batched row not committed yet (deferred, inserted in the open transaction,
        /// or in a write under way), by `urlHash`: a lookup for one of them waits for the commit
        /// (a URL whose hash merely collides waits for nothing it needs).
        var uncommitted: [UInt64: Int] = [:]
        /// The last of the batch writes (steps and commits run one after another on the writer).
        var lastWrite: Task<Void, Never>?
        var writes = 0
        /// A step is queued or running: rows arriving meanwhile wait for the next one.
        var stepping = false
        /// Rows stored since the last commit was queued; `commitRows` of them queue the next
        /// (`batchRows`; tests make it smaller).
        var sinceCommit = 0
        var commitRows = SQLiteResponseCache.batchRows
        /// Rows inserted in the writer's open transaction, and the bodies their rows replaced
        /// (removed once the replacement is committed).
        var inserted: [PendingRow] = []
        var replacedBodies: [String] = []
        /// With `batchesStores`: stored responses' new headers gathered for the next batch write,
        /// and those written in the writer's open transaction.
        var deferredUpdates: [PendingUpdate] = []
        var updated: [PendingUpdate] = []
        /// Invalidations so far, and the last one per canonical URL: a batched row stored before
        /// an invalidation of its URL is dropped even if its flush was already under way.
        var generation = 0
        var invalidatedAt: [String: Int] = [:]
        /// The index's rows when opened and those inserted since (replaced ones counted again: an
        /// upper bound), and the writer's page cache set for them (`WriterPageCache`).
        var indexRows = 0
        var pageCacheKiB = WriterPageCache.maximumKiB
    }

    public var indexPath: String { (directory as NSString).appendingPathComponent("index.sqlite") }
    /// `directory/bodies`, made once: every stored body's name starts with it.
    let bodiesPath: String
    /// The cache directory open, for file calls relative to it (`bodies/x/<name>`: three path
    /// components to walk instead of the whole path, which was most of a link's cost); -1 when
    /// read-only or `bodies/` can't be used (paths are used then, and report what is wrong).
    let directoryDescriptor: Int32
    var temporaryPath: String { (directory as NSString).appendingPathComponent("tmp") }

    /// Opens (creating if needed) the cache in `directory`. An index that is not a database or is
    /// corrupt is reported and replaced by an empty one (the cache holds nothing a run needs).
    /// - Parameters:
    ///   - redact: applied to URLs before they are written (`Redactor.redact`).
    ///   - onProblem: told about every problem worked around, once per path and message.
    ///   - readOnly: opens an existing index without creating or migrating (`cache stats`, `--dry-run`).
    public init(directory: String, readOnly: Bool = false, batchesStores: Bool = false,
                redact: @escaping @Sendable (String) -> String = { $0 },
                onProblem: @escaping @Sendable (CacheProblem) -> Void = { _ in }) throws {
        self.directory = directory
        bodiesPath = (directory as NSString).appendingPathComponent("bodies")
        self.batchesStores = batchesStores
        self.redact = redact
        self.onProblem = onProblem
        let path = (directory as NSString).appendingPathComponent("index.sqlite")
        if readOnly {
            directoryDescriptor = -1
            guard FileManager.default.fileExists(atPath: path) else {
                throw FetchError(.io, "no response cache in '\(directory)'")
            }
            var configuration = SQLiteC.configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(5)
            do {
                pool = try StoreConnections(path: path, configuration: configuration)
            } catch {
                throw FetchError(.io, "cannot open the response cache '\(path)': \(error)")
            }
            lookups = CacheLookupConnections(path: path)
            let columns = (try? lookups.read { db in try db.columns(in: "responses").map(\.name) }) ?? []
            schema = SQLiteCacheRows.Schema(hasModifiedColumn: columns.contains("body_mtime"), hasURLKey: columns.contains("url_key"))
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw FetchError(.io, "cannot create the response cache directory '\(directory)': \(error.localizedDescription)")
        }
        let count: Int
        do {
            (pool, count) = try Self.open(path)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB {
            onProblem(CacheProblem(path: path, message: "the response cache index is corrupt; starting an empty one"))
            for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
            do { (pool, count) = try Self.open(path) } catch { throw FetchError(.io, "cannot open the response cache '\(path)': \(error)") }
        } catch {
            throw FetchError(.io, "cannot open the response cache '\(path)': \(error)")
        }
        schema = SQLiteCacheRows.Schema(hasModifiedColumn: true, hasURLKey: true)
        lookups = CacheLookupConnections(path: path)
        // `bodies/` and its 16 buckets (`bodies/0` … `bodies/f`) exist before any body is written.
        mkdir(bodiesPath, 0o755)
        var info = stat()
        let descriptor = stat(bodiesPath, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
            ? Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1
        if descriptor >= 0 {
            for digit in "0123456789abcdef" { mkdirat(descriptor, "bodies/" + String(digit), 0o755) }
        }
        directoryDescriptor = descriptor
        state.withLock { s in
            s.empty = count == 0
            s.indexRows = count
            s.pageCacheKiB = WriterPageCache.kibibytes(forRows: count)
        }
    }

    deinit {
        if directoryDescriptor >= 0 { Glibc.close(directoryDescriptor) }
    }

    /// The index's pool and its number of rows. A new index is written from `template`
    /// (`StoreTemplate`), or with SQL when it is nil or can't be.
    static func open(_ path: String, template: [UInt8]? = PackageResources.cache_index_sqlite) throws -> (StoreConnections, Int) {
        let made = template.map { StoreTemplate.create(at: path, from: $0) } ?? false
        var configuration = SQLiteC.configuration()
        configuration.busyMode = .timeout(10)
        // `batchesStores` inserts rows as they come in a transaction left open between writes and
        // commits it on its timer (`SQLiteResponseCache+Commit`); every other write commits it first.
        configuration.allowsUnsafeTransactions = true
        // The most pages the writer keeps until the index's size is known (`WriterPageCache`):
        // the count below reads the unique index, and a million-row one then starts warm.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -\(WriterPageCache.maximumKiB); PRAGMA temp_store = MEMORY")
        }
        let pool = try StoreConnections(path: path, configuration: configuration)
        // From the template: the schema is current and the index empty.
        if made {
            try? pool.writeWithoutTransaction { db in WriterPageCache.set(forRows: 0, in: db) }
            return (pool, 0)
        }
        try SchemaCreation.prepare(pool, schema: currentSchema, marker: "responses", migrator: migrator)
        // A torn or truncated file may open fine and fail only when a page is read: the count reads
        // them all. On the writer's connection, like the checks above: a reader connection would be
        // opened for it alone (lookups have their own, `CacheLookupConnections`), 1.5 million
        // instructions of a run's start. The count also tells whether the index is empty.
        // The count sizes the writer's page cache too.
        let count = try pool.writeWithoutTransaction { db -> Int in
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM responses") ?? 0
            WriterPageCache.set(forRows: count, in: db)
            return count
        }
        return (pool, count)
    }

    static func openLookups(_ path: String, cacheMiB: Int = 32) throws -> DatabaseQueue {
        var configuration = SQLiteC.configuration()
        configuration.readonly = true
        // Lookups run on the caller's thread (an event loop): never wait for a lock there. A WAL
        // reader is refused only while another process recovers or truncates the WAL; that lookup
        // is then a miss.
        configuration.busyMode = .immediateError
        // Room for a large index's pages: SQLite keeps them between lookups while nothing is written,
        // and reading a page again costs a system call (a warm run read ~5 per lookup with the default 2 MiB).
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA cache_size = -\(cacheMiB * 1024)") }
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    // MARK: - ResponseCache

    public func entries(method: HTTPMethod, url: String) async -> [CachedResponse] {
        let (known, waiting) = state.withLock { s -> (Bool, Bool) in
            // Hashed only when needed: a warm cache with nothing waiting needs neither.
            var hash: UInt64?
            func urlHash() -> UInt64 {
                if let hash { return hash }
                let computed = Self.urlHash(url)
                hash = computed
                return computed
            }
            guard !s.empty || s.storedURLs.mayContain(urlHash()) else { return (false, false) }
            return (true, !s.uncommitted.isEmpty && s.uncommitted[urlHash()] != nil)
        }
        if !known { return [] }
        if waiting { await flushDeferred() }  // stored a moment ago, not committed yet
        do {
            return try lookupRows(digest: URLDigest(url), method: method, url: url)
        } catch {
            report(indexPath, "cannot read the response cache index: \(error)")
            return []
        }
    }

    /// The point query of `entries`, run on the calling thread through a read-only connection of its
    /// own (one per event loop: `CacheLookupConnections`). GRDB's async `read` hops to a reader's dispatch queue and back for every lookup, and
    /// those two thread switches cost more than the query (a hit's latency was mostly futex
    /// wake-ups); the pool's synchronous `read` adds a reader checkout and a `BEGIN`/`COMMIT`. One
    /// `SELECT` is its own consistent snapshot, so it runs without a transaction. It can't deadlock:
    /// the connection is held only inside this closure, which waits for no task, and a WAL reader
    /// doesn't wait for the writer. It blocks its thread for the query only, as reading the body does.
    private func lookupRows(digest: URLDigest, method: HTTPMethod, url: String) throws -> [CachedResponse] {
        try lookups.read { db in
            try SQLiteCacheRows.lookup(digest: digest, method: method, url: url, schema: schema, in: db)
        }
    }

    public func makeBodyWriter() -> (any CacheBodyWriter)? {
        makeBodyWriter(shared: false)
    }

    /// The job's sink writes the body into `bodies/` itself and links it to its destination (see
    /// `SQLiteCacheBodyWriter`): no second copy, no extra link. Only with the directory open.
    public func makeSharedBodyWriter(for destination: String) -> (any CacheBodyWriter)? {
        directoryDescriptor >= 0 && onThisFileSystem(destination) ? makeBodyWriter(shared: true) : nil
    }

    /// Whether `destination`'s directory (or its nearest existing ancestor) is on the cache's file
    /// system; remembered per directory for the cache's lifetime.
    private func onThisFileSystem(_ destination: String) -> Bool {
        let slash = UTF8Text.lastOffset(of: UInt8(ascii: "/"), in: destination) ?? 0
        // A batch saves into one directory, or a few: the last one asked about is compared in
        // place, with no string made and none hashed (every stored response asks).
        if let known = fileSystems.withLock({ s -> Bool? in
            guard let last = s.last, UTF8Text.prefix(of: destination, count: slash, equals: last.path) else { return nil }
            return last.same
        }) { return known }
        let directory = String(Substring(destination.utf8.prefix(slash)))
        if let known = fileSystems.withLock({ s -> Bool? in
            let known = s.same[directory]
            if let known { s.last = (directory, known) }
            return known
        }) { return known }
        var cache = stat(), info = stat()
        guard fstat(directoryDescriptor, &cache) == 0 else { return false }
        var existing = directory
        while !existing.isEmpty, stat(existing, &info) != 0 {
            existing = (existing as NSString).deletingLastPathComponent
            if existing == "/" { break }
        }
        let same = !existing.isEmpty && stat(existing, &info) == 0 && info.st_dev == cache.st_dev
        fileSystems.withLock { s in
            s.same[directory] = same
            s.last = (directory, same)
        }
        return same
    }

    private func makeBodyWriter(shared: Bool) -> (any CacheBodyWriter)? {
        do {
            // The writer lives for one response: holding the cache strongly makes no cycle.
            return try SQLiteCacheBodyWriter(directory: directory, descriptor: directoryDescriptor, shared: shared, owner: self)
        } catch {
            // The reason without the temporary file's name, so the warning comes once, not once per response.
            let reason = ((error as? FetchError)?.message ?? "\(error)").components(separatedBy: ": ").last ?? ""
            report(temporaryPath, "cannot store responses: \(reason)")
            return nil
        }
    }

    public func store(_ entry: CachedResponse, body writer: any CacheBodyWriter) async {
        await store(method: entry.method, url: entry.url, varyNames: entry.varyNames, varyKey: entry.varyKey, status: entry.status,
                    encodedHeaders: Self.encode(entry.headers), requestTime: entry.requestTime, responseTime: entry.responseTime, ttl: entry.ttl,
                    body: writer)
    }

    /// `store` from a response's parts, its stored fields already encoded (`encode`): the session
    /// stores a response the behaviour keeps unchanged this way, with no `CachedResponse` made
    /// (`CacheRules.encodedStoredHeaders`).
    func store(method: HTTPMethod, url: String, varyNames: [String]?, varyKey: String, status: Int, encodedHeaders: String,
               requestTime: Date, responseTime: Date, ttl: TimeInterval?, body writer: any CacheBodyWriter) async {
        guard let writer = writer as? SQLiteCacheBodyWriter else { return writer.discard() }
        let relative = writer.storageName
        // Completed already when the session's caching sink finished.
        guard let body = writer.completed() else { return writer.discard() }
        if !body.inPlace, !Self.move(writer.path, to: UTF8Text.joined(directory, "/", relative)) {
            // Once per reason, not once per response.
            let reason = String(cString: strerror(errno))
            writer.discard()
            report(bodiesPath, "cannot store responses: \(reason)")
            return
        }
        let row = PendingRow(key: url, digest: URLDigest(url), method: method.rawValue, varyKey: varyKey,
                             varyNames: varyNames?.joined(separator: " "), url: redact(url), status: status,
                             headers: encodedHeaders, requestTime: requestTime.timeIntervalSince1970,
                             responseTime: responseTime.timeIntervalSince1970, ttl: ttl, body: relative, size: body.size,
                             modified: body.modified, storedAt: Date().timeIntervalSince1970)
        await commit(row)
    }

    public func update(_ entry: CachedResponse) async {
        let update = PendingUpdate(entry, headers: Self.encode(entry.headers))
        if batchesStores { return commit(update) }
        do {
            try await write { db in try SQLiteCacheRows.update([update], in: db) }
        } catch {
            report(indexPath, "cannot update a stored response: \(error)")
        }
    }

    public func invalidate(url: String) async {
        // A response stored just before must not survive its invalidation, even one whose batch is
        // being written right now.
        state.withLock { s in
            s.generation += 1
            s.invalidatedAt[url] = s.generation
        }
        await flushDeferred()
        let digest = URLDigest(url)
        await delete(where: "url_key = ? AND url_hash = ?", arguments: [digest.key, digest.hex])
    }

    public func remove(_ entry: CachedResponse) async {
        // Not a newer response stored in the same row since `entry` was read.
        await delete(where: "id = ? AND (? = '' OR body = ?)", arguments: [entry.id, entry.storageName, entry.storageName])
    }

    // MARK: - Helpers

    /// The stored body's file: the name the entry carries, else the one its row has now.
    func bodyPath(of entry: CachedResponse) async throws -> String {
        if !entry.storageName.isEmpty { return UTF8Text.joined(directory, "/", entry.storageName) }
        let name = try? await pool.read { db in try String.fetchOne(db, sql: "SELECT body FROM responses WHERE id = ?", arguments: [entry.id]) }
        guard let name = name ?? nil else { throw CacheMiss(reason: "the entry is gone") }
        return (directory as NSString).appendingPathComponent(name)
    }

    private func delete(where condition: String, arguments: StatementArguments) async {
        do {
            let bodies = try await write { db -> [String] in
                let bodies = try String.fetchAll(db, sql: "SELECT body FROM responses WHERE \(condition)", arguments: arguments)
                try db.execute(sql: "DELETE FROM responses WHERE \(condition)", arguments: arguments)
                return bodies
            }
            for body in bodies { unlink((directory as NSString).appendingPathComponent(body)) }
        } catch {
            report(indexPath, "cannot remove a stored response: \(error)")
        }
    }

    func report(_ path: String, _ message: String) {
        let isNew = state.withLock { $0.reported.insert(path + "\u{0}" + message).inserted }
        if isNew { onProblem(CacheProblem(path: path, message: message)) }
    }

    /// Renames `path` to `destination`, creating the destination's directory if needed.
    private static func move(_ path: String, to destination: String) -> Bool {
        if rename(path, destination) == 0 { return true }
        guard errno == ENOENT, (try? FileIO.createDirectory(containing: destination)) != nil else { return false }
        return rename(path, destination) == 0
    }

    /// Headers as `name: value` lines (field values never contain a line break), written as bytes
    /// straight into the string's storage: `String.append` checks grapheme boundaries at every
    /// seam, which cost a cold run's store more than its SQLite insert, and gathering the bytes in
    /// an array first cost an allocation and a copy more.
    static func encode(_ headers: HTTPHeaders) -> String {
        var size = 0
        headers.forEachField { name, value in size += encodedSize(name, value) }
        return String(unsafeUninitializedCapacity: size) { buffer in
            var offset = 0
            headers.forEachField { name, value in offset = encode(name, value, into: buffer, at: offset) }
            return offset
        }
    }

    /// The bytes `encode` writes for one field.
    static func encodedSize(_ name: String, _ value: String) -> Int {
        name.utf8.count + value.utf8.count + 3
    }

    /// Writes one field as `encode` does, `Name: value` and a newline, into `buffer` at `offset`
    /// (which has `encodedSize` bytes of room); returns the offset after it.
    static func encode(_ name: String, _ value: String, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) -> Int {
        var offset = UTF8Text.copy(name, into: buffer, at: offset)
        buffer[offset] = UInt8(ascii: ":")
        buffer[offset + 1] = UInt8(ascii: " ")
        offset = UTF8Text.copy(value, into: buffer, at: offset + 2)
        buffer[offset] = UInt8(ascii: "\n")
        return offset + 1
    }

    /// The inverse of `encode`, scanning bytes (a hit decodes the stored headers once; Character
    /// splitting cost a tenth of a warm run).
    static func decode(_ text: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        var text = text
        text.withUTF8 { bytes in
            headers.reserveCapacity(bytes.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) })
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
                var colon = start
                while colon < end, bytes[colon] != UInt8(ascii: ":") { colon += 1 }
                if colon < end {
                    var valueStart = colon + 1
                    while valueStart < end, bytes[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
                    headers.add(name: String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<colon]), as: UTF8.self),
                                value: String(decoding: UnsafeBufferPointer(rebasing: bytes[valueStart..<end]), as: UTF8.self))
                }
                start = end + 1
            }
        }
        return headers
    }
}
