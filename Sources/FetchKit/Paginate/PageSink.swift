import Foundation
import NIOCore

/// Keeps one page's body in memory (pages are read as JSON) up to `PageSink.limit`, and takes a
/// `stop.status` response as the end of pagination rather than a failure.
final class PageSink: ResponseSink {
    /// A page larger than this fails the job (`validation`): pages are API responses, not files.
    static let limit = 64 << 20

    private let stopStatuses: StatusSet?
    private let box = LockedBox((head: TransportResponseHead?.none, body: Data()))

    init(stopStatuses: StatusSet?) {
        self.stopStatuses = stopStatuses
    }

    var head: TransportResponseHead? { box.withLock { $0.head } }
    var body: Data { box.withLock { $0.body } }

    func handles(status: Int) -> Bool { stopStatuses?.contains(status) ?? false }

    func open(_ head: TransportResponseHead) throws {
        box.withLock { state in
            state.head = head
            state.body.removeAll(keepingCapacity: true)
        }
    }

    func write(_ chunk: ByteBuffer) throws {
        try box.withLock { state in
            guard state.body.count + chunk.readableBytes <= Self.limit else {
                throw FetchError(.validation, "a page is larger than \(Self.limit >> 20) MiB")
            }
            chunk.withUnsafeReadableBytes { state.body.append(contentsOf: $0) }
        }
    }
}
