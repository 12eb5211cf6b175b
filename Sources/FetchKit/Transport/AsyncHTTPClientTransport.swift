import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The transport on AsyncHTTPClient: one client per run, its pool sized from `per_host`, redirects
/// left to FetchKit's `Redirector`, bodies streamed with backpressure, and the read (stall) and total
/// deadlines enforced here because AsyncHTTPClient's deadline covers only the response head.
public final class AsyncHTTPClientTransport: HTTPTransport {
    private let client: HTTPClient

    /// - Parameters:
    ///   - perHost: connections kept per host (`settings.per_host`).
    ///   - connectTimeout: the client-wide connect timeout.
    public init(perHost: Int = 4, connectTimeout: Duration = TransportTimeouts.defaults.connect) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(Int64(connectTimeout.inNanoseconds))),
            decompression: .disabled
        )
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(1, perHost)
        // A refused connection fails the attempt at once (as in curl); FetchKit's RetryPolicy decides
        // whether and when to try again, with its own backoff and budget.
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: configuration)
    }

    /// Closes every connection; call it once the run is over, on every path.
    public func shutdown() async throws {
        try await client.shutdown()
    }

    public func send(
        _ request: BuiltRequest,
        options: TransportOptions,
        onHead: @escaping @Sendable (TransportResponseHead) async throws -> Void,
        onChunk: @escaping @Sendable (ByteBuffer) async throws -> Void
    ) async throws {
        let started = ContinuousClock.now
        let timeouts = options.timeouts
        let url = Redactor.redactURLUserinfo(request.url.absoluteString)
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue)
        for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
        outgoing.body = try Self.body(request.body)
        outgoing.tlsConfiguration = try Self.tlsConfiguration(options.tls, url: url)

        // The head must arrive within connect + read (and within the total deadline).
        var headBudget = timeouts.connect + timeouts.read
        if let total = timeouts.total { headBudget = min(headBudget, total) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(outgoing, timeout: .nanoseconds(Int64(headBudget.inNanoseconds)))
        } catch {
            throw Self.classify(error, url: url, afterHead: false)
        }
        var headers = HTTPHeaders()
        for header in response.headers { headers.add(name: header.name, value: header.value) }
        let expected = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        try await onHead(TransportResponseHead(status: Int(response.status.code), headers: headers, expectedLength: expected))

        let watch = ProgressWatch()
        let received = try await withThrowingTaskGroup(of: Int64?.self) { group in
            group.addTask {
                var count: Int64 = 0
                do {
                    for try await chunk in response.body {
                        count += Int64(chunk.readableBytes)
                        watch.consumerStarted()
                        try await onChunk(chunk)
                        watch.consumerFinished()
                    }
                } catch let error as FetchError {
                    throw error
                } catch {
                    throw Self.classify(error, url: url, afterHead: true)
                }
                return count
            }
            group.addTask {
                try await watch.watch(read: timeouts.read, total: timeouts.total, started: started, url: url)
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let count = result { return count }
            }
            return 0
        }
        if let expected, received < expected, request.method != .head, response.status != .notModified {
            throw FetchError(.truncated, "the body ended after \(received) of \(expected) bytes", url: url, status: Int(response.status.code))
        }
    }

    // MARK: - TLS

    /// The TLS settings a `tls` block asks for; nil keeps the client's (system trust store, verified).
    static func tlsConfiguration(_ tls: TLSOptions, url: String) throws -> TLSConfiguration? {
        if let pins = tls.pins, !pins.isEmpty {
            // AsyncHTTPClient gives no hook to see the peer's chain; refuse rather than send unpinned.
            throw FetchError(.tls, "tls.pins is not supported by this version of fetchctl; the request was not sent", url: url)
        }
        guard tls.caFile != nil || tls.insecure == true else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile = tls.caFile {
            guard FileManager.default.isReadableFile(atPath: caFile) else {
                throw FetchError(.tls, "tls.ca_file '\(caFile)' cannot be read", url: url)
            }
            configuration.trustRoots = .file(caFile)
        }
        if tls.insecure == true { configuration.certificateVerification = .none }
        return configuration
    }

    // MARK: - Request bodies

    static func body(_ body: RequestBody) throws -> HTTPClientRequest.Body? {
        switch body {
        case .none: return nil
        case .data(let data): return .bytes(ByteBuffer(bytes: data))
        case .file(let path):
            let size = try MultipartFormData.fileSize(path)
            return .stream(FileChunks(path: path), length: .known(size))
        case .multipart(let form):
            let length = try form.contentLength()
            if length <= MultipartFormData.encodingMemoryThreshold { return .bytes(ByteBuffer(bytes: try form.encode())) }
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("fetchctl-multipart-\(UUID().uuidString)")
            FileManager.default.createFile(atPath: url.path, contents: nil)
            let handle = try FileHandle(forWritingTo: url)
            defer { try? handle.close() }
            try form.write { try handle.write(contentsOf: $0) }
            return .stream(FileChunks(path: url.path, deleteWhenDone: true), length: .known(length))
        }
    }

    // MARK: - Errors

    /// Maps AsyncHTTPClient and NIO errors to stable codes.
    static func classify(_ error: Error, url: String, afterHead: Bool) -> FetchError {
        if let fetch = error as? FetchError { return fetch }
        if error is CancellationError { return FetchError(.cancelled, "cancelled", url: url) }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded, .getConnectionFromPoolTimeout:
                return FetchError(.timeout, "timed out (\(client))", url: url)
            case .tlsHandshakeTimeout:
                return FetchError(.tlsHandshake, "TLS handshake timed out", url: url)
            case .remoteConnectionClosed, .bodyLengthMismatch:
                return afterHead ? FetchError(.truncated, "the connection closed before the body was complete", url: url)
                    : FetchError(.connection, "the connection closed before a response", url: url)
            case .cancelled, .requestStreamCancelled:
                return FetchError(.cancelled, "cancelled", url: url)
            default:
                return FetchError(.connection, "\(client)", url: url)
            }
        }
        let text = String(describing: error)
        if text.contains("NIOSSL") || text.contains("TLS") || text.contains("SSL") {
            return FetchError(.tlsHandshake, text, url: url)
        }
        if text.lowercased().contains("dns") || text.contains("getaddrinfo") || text.contains("resolve") {
            return FetchError(.dns, text, url: url)
        }
        if afterHead { return FetchError(.truncated, "the body failed: \(text)", url: url) }
        return FetchError(.connection, text, url: url)
    }
}

/// Tracks body progress for the stall watchdog; the consumer's own time (writing to disk) never
/// counts as a stall.
final class ProgressWatch: Sendable {
    private struct State {
        var last = ContinuousClock.now
        var consuming = false
    }

    private let state = LockedBox(State())

    func consumerStarted() { state.withLock { $0.consuming = true } }

    func consumerFinished() {
        state.withLock {
            $0.consuming = false
            $0.last = .now
        }
    }

    /// Throws `timeout` when no chunk arrives for `read`, or when `total` has passed since `started`.
    func watch(read: Duration, total: Duration?, started: ContinuousClock.Instant, url: String) async throws {
        let tick = min(max(read / 10, .milliseconds(10)), .milliseconds(250))
        while true {
            try await Task.sleep(for: tick)
            let (last, consuming) = state.withLock { ($0.last, $0.consuming) }
            let now = ContinuousClock.now
            if let total, now - started > total {
                throw FetchError(.timeout, "the request took longer than its total timeout of \(DurationGrammar.format(total))", url: url)
            }
            if !consuming, now - last > read {
                throw FetchError(.timeout, "no data for \(DurationGrammar.format(read)) (read timeout)", url: url)
            }
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
