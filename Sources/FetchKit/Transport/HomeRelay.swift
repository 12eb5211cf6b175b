import NIOCore

/// Runs a small HTTP/2 response's callbacks (`onHead`, `onChunk`) on the event loop its request
/// came from instead of the connection's.
///
/// A host's HTTP/2 streams share one connection, so one loop: every job's sink work (creating its
/// file, writing the body) ran there, and over TLS that loop was busy three quarters of a run while
/// the other one idled (`perf`, 2,000 × 16 KiB over one connection: 74% and 19% of the samples).
/// Handed to the request's own loop, that work spreads over both.
///
/// Only for a response whose `Content-Length` says it is small (`limit`): its chunks are queued on
/// the other loop as they arrive, while the connection goes on reading (its flow-control windows
/// reopen as frames are read), so a large body would pile up in memory if its file were slower
/// than the network. A larger or unannounced body runs on the connection's loop as before, where
/// the next chunk is read only once the last one is written.
///
/// The callbacks keep their order (the connection's loop submits them, and the other loop runs
/// what one thread submits in turn), and the completion, submitted after them, runs after them. A
/// callback that throws ends the exchange with its error, as on the connection's loop: the stream
/// is cancelled with it, the callbacks queued behind it are skipped, and the completion reports it.
final class HomeRelay: Sendable {
    /// The largest body relayed (announced by `Content-Length`).
    static let limit: Int64 = 1 << 20

    private let home: EventLoop
    private let cancel: @Sendable (Error) -> Void
    private let state = LockedBox(State())

    private struct State {
        /// Decided at the head: whether this response's callbacks run at home.
        var relays = false
        /// The first error a callback threw at home.
        var failure: Error?
    }

    /// - Parameters:
    ///   - home: the loop the request came from.
    ///   - cancel: ends the exchange with an error (called from `home`).
    init(home: EventLoop, cancel: @escaping @Sendable (Error) -> Void) {
        self.home = home
        self.cancel = cancel
    }

    /// `onHead` wrapped: decides from the head whether to relay, then runs or relays it.
    func head(_ onHead: @escaping @Sendable (TransportResponseHead) throws -> Void) -> @Sendable (TransportResponseHead) throws -> Void {
        { [self] head in
            let relays = head.expectedLength.map { $0 <= Self.limit } ?? false
            state.withLock { $0.relays = relays }
            guard relays else { return try onHead(head) }
            submit { try onHead(head) }
        }
    }

    /// `onChunk` wrapped: relayed when the head was; throws the error a relayed callback threw.
    func chunk(_ onChunk: @escaping @Sendable (ByteBuffer) throws -> Void) -> @Sendable (ByteBuffer) throws -> Void {
        { [self] buffer in
            let (relays, failure) = state.withLock { ($0.relays, $0.failure) }
            if let failure { throw failure }
            guard relays else { return try onChunk(buffer) }
            submit { try onChunk(buffer) }
        }
    }

    /// Runs `done` at home after every relayed callback, with the error one of them threw, if any,
    /// in place of `result`.
    func finish<T>(_ result: Result<T, Error>, _ done: @escaping @Sendable (Result<T, Error>) -> Void) where T: Sendable {
        home.execute { [self] in
            if let failure = state.withLock({ $0.failure }) { done(.failure(failure)) } else { done(result) }
        }
    }

    private func submit(_ callback: @escaping @Sendable () throws -> Void) {
        home.execute { [self] in
            guard state.withLock({ $0.failure == nil }) else { return }
            do {
                try callback()
            } catch {
                state.withLock { $0.failure = error }
                cancel(error)
            }
        }
    }
}
