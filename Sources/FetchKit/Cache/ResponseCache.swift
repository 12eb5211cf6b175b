import Foundation
import NIOCore

/// A store of HTTP responses that outlives the process: what `URLCache` is to Alamofire, on a
/// store of FetchKit's own (Foundation's `URLCache` never stores on Linux). The `Session` asks it
/// for stored responses before sending, tees accepted bodies into it, freshens entries on `304`
/// and invalidates them after unsafe requests; the rules (RFC 9111) are the session's, the store
/// only keeps entries. `SQLiteResponseCache` is the default.
///
/// Implementations are called from many tasks at once. A store that fails (a full disk, a corrupt
/// index) reports it through `onProblem` and behaves as if the entry were absent: a cache never
/// fails a request.
///
/// A store is an object (a class or an actor): every request holds it, and a class-bound
/// existential is copied with one retain, where an opaque one went through its type's value
/// witnesses several times a request.
public protocol ResponseCache: AnyObject, Sendable {
    /// Every stored response for `method` and the canonical URL `url` (`CacheKey.canonicalURL`),
    /// newest first. Entries whose body is missing or torn are removed and not returned.
    func entries(method: HTTPMethod, url: String) async -> [CachedResponse]

    /// Calls `body` with the stored body of `entry`, in order. Throws when the body is gone or no
    /// longer matches its recorded size (the entry is then removed); nothing was passed to `body`
    /// in that case unless reading failed midway.
    func readBody(of entry: CachedResponse, _ body: (ByteBuffer) throws -> Void) async throws

    /// Puts the stored body of `entry` at a `save:`'s `destination` as a hard link to the stored
    /// file, where the store can do so safely (no other file shares the body, and it has the owner
    /// and mode a saved file gets): nothing is opened for writing and no byte is written. When
    /// `destination` exists, the link is made as `staging` and renamed over it, so `destination`
    /// is never missing or partial. False, with nothing changed, when the store can't (the session
    /// then calls `copyBody` or `readBody`). Throws as `readBody` does. The default is false.
    func linkBody(of entry: CachedResponse, to destination: String, staging: String) async throws -> Bool
    /// Copies the stored body of `entry` into a `save:`'s temporary file, open as `descriptor`,
    /// without passing it through memory. False when the store can't (the session then calls
    /// `readBody`). Throws as `readBody` does. The default is false.
    func copyBody(of entry: CachedResponse, descriptor: Int32) async throws -> Bool

    /// Starts storing a body; nil when the store can't take one now (not writable, say).
    func makeBodyWriter() -> (any CacheBodyWriter)?

    /// Starts storing a body that the job's sink saves itself (`save:`), into a file the store
    /// names (`CacheBodyWriter.sharedFile`): the sink creates that file, writes the body there and,
    /// once it is complete, hard-links it to its own destination instead of moving a temporary
    /// file into place. The store keeps the file under its name: the body is written once.
    /// `write` then only counts the bytes. nil when the store can't, or `destination` is on another
    /// file system (the job's bytes must not depend on the cache's disk): the session then uses
    /// `makeBodyWriter()`. The default is nil.
    func makeSharedBodyWriter(for destination: String) -> (any CacheBodyWriter)?

    /// Stores `entry` with the body `writer` collected, replacing a stored response with the same
    /// method, URL and `varyKey`. The body is in place before the entry becomes visible.
    func store(_ entry: CachedResponse, body writer: any CacheBodyWriter) async

    /// Replaces the stored headers and times of `entry` (a `304` or a `HEAD` freshened it).
    func update(_ entry: CachedResponse) async

    /// Removes every stored response (all methods, all variants) for the canonical URL `url`.
    func invalidate(url: String) async

    /// Removes one entry (a body that went missing, a response that says `no-store` now).
    func remove(_ entry: CachedResponse) async

    /// Notes how a lookup ended: `entry` served as `use`, or a `.miss` (least-recently-used pruning,
    /// the hit ratio). Must return at once.
    func didServe(_ entry: CachedResponse?, as use: RequestMetrics.CacheUse)

    /// A hint that the run's last jobs have started: a store that gathers entries before writing
    /// them may write what it has now. Must return at once. The default does nothing.
    func commitSoon()
}

extension ResponseCache {
    public func linkBody(of entry: CachedResponse, to destination: String, staging: String) async throws -> Bool { false }
    public func copyBody(of entry: CachedResponse, descriptor: Int32) async throws -> Bool { false }
    public func makeSharedBodyWriter(for destination: String) -> (any CacheBodyWriter)? { nil }
    public func commitSoon() {}
}

/// Collects a body being stored; written on the transport's I/O thread as chunks arrive. An object
/// (one body's state), so that the session hands it around by reference and the store recognizes
/// its own writers with a class cast.
public protocol CacheBodyWriter: AnyObject, Sendable {
    func write(_ chunk: ByteBuffer) throws
    /// Bytes written so far.
    var size: Int64 { get }
    /// The whole body was written: called before the job's sink moves (or links) its file into
    /// place. A throw drops the body (the job goes on).
    func complete() throws
    /// Throws away what was written (the response was not stored after all).
    func discard()
    /// The file the job's sink writes the body to itself (`ResponseCache.makeSharedBodyWriter()`);
    /// nil for a writer that takes the chunks. The default is nil.
    var sharedFile: SharedBodyFile? { get }
    /// The sink opened `sharedFile` as `descriptor` (open until the sink finishes, after
    /// `complete()`): the writer may `fstat` it rather than look the file up by name. The default
    /// does nothing.
    func sharedFileOpened(_ descriptor: Int32)
}

/// A file a response cache hands to a job's sink to write a body into (`makeSharedBodyWriter()`):
/// `name` relative to the open directory `directory` (or `AT_FDCWD` and a whole path), and its
/// whole `path` for messages.
public struct SharedBodyFile: Sendable {
    public var directory: Int32
    public var name: String
    /// The whole path, or the directory's when `name` is to be appended (made only when a message
    /// asks: every stored response hands one of these over).
    private var pathOrBase: String
    private var appendsName: Bool

    public var path: String {
        get { appendsName ? UTF8Text.joined(pathOrBase, "/", name) : pathOrBase }
        set { pathOrBase = newValue; appendsName = false }
    }

    public init(directory: Int32, name: String, path: String) {
        self.directory = directory
        self.name = name
        pathOrBase = path
        appendsName = false
    }

    /// `name` under the directory whose path is `base` (open as `directory`).
    init(directory: Int32, name: String, under base: String) {
        self.directory = directory
        self.name = name
        pathOrBase = base
        appendsName = true
    }
}

extension CacheBodyWriter {
    public func complete() throws {}
    public var sharedFile: SharedBodyFile? { nil }
    public func sharedFileOpened(_ descriptor: Int32) {}
}

/// A stored response: what was received (status, headers without `Set-Cookie` and hop-by-hop
/// fields), when (the request and response times RFC 9111 §4.2.3 computes ages from), and which
/// request headers it varies on.
public struct CachedResponse: Sendable, Equatable {
    /// The store's identity for the entry (0 before it is stored).
    public var id: Int64
    public var method: HTTPMethod
    /// The canonical URL (`CacheKey.canonicalURL`).
    public var url: String
    public var status: Int
    public var headers: HTTPHeaders
    /// When the request that got this response was sent, and when its head arrived.
    public var requestTime: Date
    public var responseTime: Date
    /// The lowercased request header names the response's `Vary` lists; nil without `Vary`.
    public var varyNames: [String]?
    /// Identifies the variant: a digest of the request's values of `varyNames` ("" without `Vary`).
    public var varyKey: String
    /// `behavior: {modify: {ttl}}`: a freshness lifetime that replaces the response's own.
    public var ttl: TimeInterval?
    /// Set when a `HEAD` response showed the stored one is out of date: revalidate before use.
    public var invalidated: Bool
    public var bodySize: Int64
    /// Where the store keeps the body (its own name for it); set by the store.
    var storageName: String = ""
    /// The body file's modification time (ns) when stored, checked with its size before serving.
    var storageModified: Int64?

    public init(id: Int64 = 0, method: HTTPMethod, url: String, status: Int, headers: HTTPHeaders, requestTime: Date, responseTime: Date,
                varyNames: [String]? = nil, varyKey: String = "", ttl: TimeInterval? = nil, invalidated: Bool = false, bodySize: Int64 = 0) {
        self.id = id
        self.method = method
        self.url = url
        self.status = status
        self.headers = headers
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.varyNames = varyNames
        self.varyKey = varyKey
        self.ttl = ttl
        self.invalidated = invalidated
        self.bodySize = bodySize
    }
}

/// A problem the response cache met and worked around (the entry was skipped, the run went on).
public struct CacheProblem: Sendable, CustomStringConvertible {
    /// The file or directory concerned.
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(message) (\(path))" }
}
