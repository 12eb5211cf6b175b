import Foundation
import NIOCore

/// Where an accepted response body goes, attempt by attempt. The session calls, in order:
/// `prepare` before each attempt (a resumable download adds its `Range` here), `open` once a head has
/// passed validation, `write` for every chunk, then `finish` when the body is complete, or `abandon`
/// when the attempt failed (the session may then retry, calling `prepare` again). Calls for one
/// request never overlap. `open` and `write` run on the transport's I/O thread as the response
/// arrives (see `HTTPTransport`), so they are synchronous: write the chunk, don't wait for others.
public protocol ResponseSink: Sendable {
    func prepare(_ request: BuiltRequest, attempt: Int) async throws -> BuiltRequest
    /// Whether the sink itself judges a response of `status` that validation's status set would
    /// reject (a download's `304` to its conditional request, `416` past a complete `.part`).
    func handles(status: Int) -> Bool
    func open(_ head: TransportResponseHead) throws
    func write(_ chunk: ByteBuffer) throws
    func finish() async throws
    func abandon() async
    /// What the response cache had to do with the response this attempt received: `miss` unless
    /// the sink is the session's caching sink and the response was a `304` to its revalidation.
    var cacheUse: RequestMetrics.CacheUse { get }
}

extension ResponseSink {
    public func prepare(_ request: BuiltRequest, attempt: Int) async throws -> BuiltRequest { request }
    public func handles(status: Int) -> Bool { false }
    public func finish() async throws {}
    public func abandon() async {}
    public var cacheUse: RequestMetrics.CacheUse { .miss }
}

/// A sink that writes the accepted body, byte for byte, to a file of its own and moves that file
/// into place in `finish` (`FileSink`). The response cache can hand it a file of its own to write
/// instead (`open(_:sharing:)`), and the body is then written once for both.
protocol StagedFileSink: ResponseSink {
    /// `open`, writing the body to `file` (a response cache's body, not there yet) instead of a
    /// temporary file, and in `finish` hard-linking `file` to the destination rather than moving
    /// it (the cache keeps its name). Returns the file's descriptor (open until `finish`). Throws
    /// when `file` can't be created; nothing is open then.
    func open(_ head: TransportResponseHead, sharing file: SharedBodyFile) throws -> Int32
    /// The file the body is being written to and its descriptor, while the sink is open.
    var stagedFile: (path: String, descriptor: Int32)? { get }
    /// Where a stored body with the same contents may be hard-linked instead of written (a
    /// response cache hit): the destination, and a sibling name to link under first when the
    /// destination already exists (then renamed over it, so it is never missing). nil when the
    /// save must write and sync a file of its own (`durable`).
    var linkTarget: (destination: String, staging: String)? { get }
}

/// Keeps the body in memory, for small responses a program wants as `Data`.
public final class DataSink: ResponseSink {
    private let box = LockedBox(Data())

    public init() {}

    /// The body of the last attempt that opened.
    public var data: Data { box.withLock { $0 } }

    public func open(_ head: TransportResponseHead) throws {
        box.withLock { $0.removeAll(keepingCapacity: true) }
    }

    public func write(_ chunk: ByteBuffer) throws {
        box.withLock { data in chunk.withUnsafeReadableBytes { data.append(contentsOf: $0) } }
    }
}

/// Reads and drops the body (a job with neither `save` nor `download`: a check or a trigger).
public struct DiscardSink: ResponseSink {
    public init() {}
    public func open(_ head: TransportResponseHead) throws {}
    public func write(_ chunk: ByteBuffer) throws {}
}
