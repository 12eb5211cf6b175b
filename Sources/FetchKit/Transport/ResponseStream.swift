import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One response, handled on the connection's event loop as it arrives (AsyncHTTPClient's delegate
/// API): the head and every body chunk go straight to the session's callbacks, which validate and
/// write to the sink right there, as curl does on its one thread. No chunk crosses threads, so a
/// transfer costs no thread hops per chunk, and the kernel's socket buffer is the backpressure.
///
/// A watchdog on the same event loop enforces what AsyncHTTPClient's deadline doesn't: the
/// `ExchangeDeadlines`.
final class ResponseStream: HTTPClientResponseDelegate {
    typealias Response = Int64

    private struct State {
        var head: TransportResponseHead?
        var received: Int64 = 0
        var lastProgress = NIODeadline.now()
        var watchdog: Scheduled<Void>?
        var failure: Error?
        var finished = false
    }

    private let deadlines: ExchangeDeadlines
    private let onHead: @Sendable (TransportResponseHead) throws -> Void
    private let onChunk: @Sendable (ByteBuffer) throws -> Void
    private let state = LockedBox(State())

    init(timeouts: TransportTimeouts, url: String, networkWaiter: NetworkWaiter? = nil,
         onHead: @escaping @Sendable (TransportResponseHead) throws -> Void, onChunk: @escaping @Sendable (ByteBuffer) throws -> Void) {
        deadlines = ExchangeDeadlines(timeouts: timeouts, url: url, networkWaiter: networkWaiter)
        self.onHead = onHead
        self.onChunk = onChunk
    }

    /// The head, once received.
    var head: TransportResponseHead? { state.withLock { $0.head } }
    var sawHead: Bool { head != nil }
    /// What a callback or the watchdog failed the request with.
    var failure: Error? { state.withLock { $0.failure } }

    func didSendRequestHead(task: HTTPClient.Task<Int64>, _ head: HTTPRequestHead) {
        let now = NIODeadline.now()
        state.withLock { $0.lastProgress = now }
        arm(task, after: deadlines.untilNextCheck(last: now, now: now))
    }

    /// A request body being sent counts as progress (a slow upload is not a stalled response).
    func didSendRequestPart(task: HTTPClient.Task<Int64>, _ part: IOData) {
        state.withLock { $0.lastProgress = .now() }
    }

    func didReceiveHead(task: HTTPClient.Task<Int64>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let transportHead = TransportResponseHead(head)
        state.withLock { $0.head = transportHead }
        return call(task) { try onHead(transportHead) }
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Int64>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        state.withLock { $0.received += Int64(buffer.readableBytes) }
        return call(task) { try onChunk(buffer) }
    }

    func didFinishRequest(task: HTTPClient.Task<Int64>) throws -> Int64 {
        state.withLock { s in
            s.finished = true
            s.watchdog?.cancel()
            s.watchdog = nil
            return s.received
        }
    }

    func didReceiveError(task: HTTPClient.Task<Int64>, _ error: Error) {
        state.withLock { s in
            s.finished = true
            s.watchdog?.cancel()
            s.watchdog = nil
        }
    }

    /// Runs a callback; a throw fails the request with that error. Progress is stamped after it, so
    /// the callback's own time (writing to disk) never counts as a stall.
    private func call(_ task: HTTPClient.Task<Int64>, _ body: () throws -> Void) -> EventLoopFuture<Void> {
        do {
            try body()
            state.withLock { $0.lastProgress = .now() }
            return task.eventLoop.makeSucceededVoidFuture()
        } catch {
            fail(task, error)
            return task.eventLoop.makeFailedFuture(error)
        }
    }

    private func fail(_ task: HTTPClient.Task<Int64>, _ error: Error) {
        let first = state.withLock { s -> Bool in
            guard s.failure == nil else { return false }
            s.failure = error
            return true
        }
        if first { task.fail(reason: error) }
    }

    /// Schedules the next check on the task's event loop.
    private func arm(_ task: HTTPClient.Task<Int64>, after delay: Duration) {
        let scheduled = task.eventLoop.scheduleTask(in: .nanoseconds(delay.inNanoseconds)) { [self] in
            check(task)
        }
        let stale = state.withLock { s -> Bool in
            guard !s.finished else { return true }
            s.watchdog = scheduled
            return false
        }
        if stale { scheduled.cancel() }
    }

    private func check(_ task: HTTPClient.Task<Int64>) {
        let now = NIODeadline.now()
        let (finished, last, hasHead) = state.withLock { ($0.finished, $0.lastProgress, $0.head != nil) }
        guard !finished else { return }
        switch deadlines.check(now: now, lastProgress: last, hasHead: hasHead) {
        case .fail(let error):
            fail(task, error)
        case .checkAgain(let delay, let resetProgress):
            if resetProgress { state.withLock { $0.lastProgress = now } }
            arm(task, after: delay)
        }
    }
}

/// A file's contents as `ByteBuffer`s of 64 KiB, read as the request body is sent.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let path: String
    var deleteWhenDone = false

    func makeAsyncIterator() -> Iterator { Iterator(path: path, deleteWhenDone: deleteWhenDone) }

    struct Iterator: AsyncIteratorProtocol {
        let path: String
        let deleteWhenDone: Bool
        var handle: FileHandle?
        var opened = false

        init(path: String, deleteWhenDone: Bool) {
            self.path = path
            self.deleteWhenDone = deleteWhenDone
        }

        mutating func next() async throws -> ByteBuffer? {
            if !opened {
                opened = true
                handle = FileHandle(forReadingAtPath: path)
                guard handle != nil else { throw FetchError(.io, "cannot read body file '\(path)'") }
            }
            guard let handle else { return nil }
            if let data = try handle.read(upToCount: 65_536), !data.isEmpty { return ByteBuffer(bytes: data) }
            try? handle.close()
            self.handle = nil
            if deleteWhenDone { try? FileManager.default.removeItem(atPath: path) }
            return nil
        }
    }
}

extension Duration {
    var inNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
