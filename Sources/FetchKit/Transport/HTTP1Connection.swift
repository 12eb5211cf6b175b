import NIOCore
import NIOHTTP1

/// One keep-alive HTTP/1.1 connection of `NIOTransport`, running one exchange at a time. All of
/// its state lives on the channel's event loop: the request is written, the head and every body
/// chunk go straight to the session's callbacks as they are decoded, and the exchange's deadlines
/// are checked by a timer on the same loop. Nothing crosses a thread until the exchange ends.
final class HTTP1Connection: PooledConnection, @unchecked Sendable {
    let channel: Channel
    let key: ConnectionPool.Key
    private let handler: HTTP1ExchangeHandler

    var isMultiplexed: Bool { false }

    init(channel: Channel, key: ConnectionPool.Key, handler: HTTP1ExchangeHandler) {
        self.channel = channel
        self.key = key
        self.handler = handler
    }

    /// Sends `head` (and `body`) and delivers the response to the callbacks; `completion` gets the
    /// body's byte count and whether the connection may take another request, or the error. Call
    /// it on the event loop. Returns an id for `cancel`.
    func execute(_ head: HTTPRequestHead, body: ByteBuffer?, deadlines: ExchangeDeadlines,
                 onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
                 onChunk: @escaping @Sendable (ByteBuffer) throws -> Void,
                 completion: @escaping @Sendable (Result<ExchangeFinished, Error>) -> Void) -> UInt64 {
        handler.start(head, body: body, exchange: ExchangeCore.Exchange(deadlines: deadlines, onHead: onHead, onChunk: onChunk,
                                                                              completion: completion))
    }

    /// Ends exchange `id` with `error` if it is still running, closing the connection. Call it on
    /// the event loop.
    func cancel(_ id: UInt64, with error: Error) {
        handler.cancel(id, with: error)
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// A transport failure, as opposed to an error the session's callbacks threw: classified by
/// `NIOTransport` into a `FetchError`.
struct TransportFailure: Error {
    var underlying: Error
    /// The response head had arrived.
    var afterHead: Bool
}

/// The connection closed under an exchange.
struct ConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the connection was closed" }
}
