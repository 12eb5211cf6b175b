import Foundation
import NIOCore

extension Session {
    /// One attempt: send, follow redirects, validate, stream the accepted body into the sink.
    func attempt(_ request: BuiltRequest, state: inout RequestState, options: RequestOptions,
                 sink: some ResponseSink) async throws -> Response {
        var current = request
        var hops = 0
        while true {
            state.lastRequest = current
            let host = Self.hostKey(of: current.url)
            // The limiters' free slots taken without an `async` call (`tryAcquire`, `isEmpty`).
            if !hosts.tryAcquire(host) { try await hosts.acquire(host) }
            if let slots, !slots.tryAcquire("") {
                do {
                    try await slots.acquire("")
                } catch {
                    hosts.release(host)
                    throw error
                }
            }
            let exchange: Exchange
            do {
                // Last before sending, so waiting for a connection slot can't bunch requests up.
                if !rates.isEmpty { try await rates.acquire(host) }
                exchange = try await self.exchange(current, hops: hops, state: state, options: options, sink: sink)
                slots?.release("")
                hosts.release(host)
            } catch {
                slots?.release("")
                hosts.release(host)
                throw error
            }
            state.response = exchange.head
            switch exchange.outcome {
            case .redirect(let next):
                hops += 1
                current = next
                (sink as? any RedirectObserving)?.willFollowRedirect()
            case .failed(let error):
                throw error
            case .accepted:
                try await sink.finish()
                return Response(request: current, head: exchange.head, bytes: exchange.bytes, attempts: state.attempt,
                                duration: ContinuousClock.now - state.startedAt)
            }
        }
    }

    struct Exchange {
        enum Outcome {
            case accepted
            case redirect(BuiltRequest)
            case failed(FetchError)
        }

        var head: TransportResponseHead
        var outcome: Outcome
        var bytes: Int64
    }

    /// A body this large or larger is not read just to keep the connection (a redirect's or an
    /// error's body); the connection is closed instead.
    static let discardLimit: Int64 = 64 * 1024

    /// One request/response on the wire.
    private func exchange(_ request: BuiltRequest, hops: Int, state: RequestState, options: RequestOptions,
                          sink: some ResponseSink) async throws -> Exchange {
        let requestInfo = info(state, url: request.url)
        let shownURL = requestInfo.url
        let started = ContinuousClock.now
        let progress = ExchangeProgress()
        let monitor = eventMonitor
        let redactor = self.redactor
        // What the callbacks need, captured on its own: capturing `options` copied all of it (two
        // boxes, a retain and a release of each of its references) for every exchange.
        let redirector = options.redirector, validator = options.validator, decodesContent = options.decodesContent
        eventMonitor.requestDidResume(requestInfo)
        do {
            try await transport.send(request, options: TransportOptions(timeouts: options.timeouts, tls: options.tls, networkWaiter: networkWaiter),
                                     onHead: { head in
                progress.setHead(head)
                switch redirector.decide(request, status: head.status, headers: head.headers, hops: hops, redactor: redactor) {
                case .follow(let next):
                    progress.setOutcome(.redirect(next))
                    if (head.expectedLength ?? Session.discardLimit) >= Session.discardLimit { throw ExchangeStop() }
                    return
                case .fail(let error):
                    progress.setOutcome(.failed(error))
                    throw ExchangeStop()
                case .returnResponse:
                    break
                }
                let failure = sink.handles(status: head.status) ? nil : validator.validate(head, for: request, url: shownURL)
                monitor.request(requestInfo, didValidateWithError: failure)
                if let failure {
                    progress.setOutcome(.failed(failure))
                    if (head.expectedLength ?? Session.discardLimit) >= Session.discardLimit { throw ExchangeStop() }
                    return
                }
                if decodesContent, let decoder = ContentDecoder.make(contentEncoding: head.headers["Content-Encoding"]) {
                    progress.setDecoder(decoder)
                }
                try sink.open(head)
            }, onChunk: { chunk in
                // One lock to read what a chunk needs and one to count it (each accessor took its
                // own: a dozen a job).
                let (accepting, decoder) = progress.forChunk()
                guard accepting else {
                    if progress.discard(chunk.readableBytes) >= Session.discardLimit { throw ExchangeStop() }
                    return
                }
                let decoded = try decoder?.decode(chunk, url: shownURL) ?? chunk
                let (total, status) = progress.add(decoded.readableBytes)
                if let error = validator.checkSize(total, status: status, url: shownURL) { throw error }
                try sink.write(decoded)
                monitor.request(requestInfo, didReceiveBytes: decoded.readableBytes)
            })
        } catch {
            // A redirect or failure decided at the head doesn't need the rest of the body.
            let seen = progress.snapshot()
            guard seen.outcome != nil, let head = seen.head else {
                if let head = seen.head {
                    monitor.request(requestInfo, didGatherMetrics: RequestMetrics(status: head.status, bytes: seen.received,
                                                                                  duration: .now - started, httpVersion: head.httpVersion))
                }
                throw error
            }
            return finish(seen, head: head, started: started, info: requestInfo, cache: sink.cacheUse)
        }
        let seen = progress.snapshot()
        guard let head = seen.head else { throw FetchError(.connection, "no response", url: shownURL) }
        return finish(seen, head: head, started: started, info: requestInfo, cache: sink.cacheUse)
    }

    private func finish(_ seen: ExchangeProgress.Seen, head: TransportResponseHead, started: ContinuousClock.Instant,
                        info: RequestInfo, cache: RequestMetrics.CacheUse) -> Exchange {
        eventMonitor.request(info, didGatherMetrics: RequestMetrics(status: head.status, bytes: seen.received, duration: .now - started,
                                                                    cache: cache, httpVersion: head.httpVersion))
        return Exchange(head: head, outcome: seen.outcome ?? .accepted, bytes: seen.bytes)
    }

    /// The name the per-host limits count a request's host by: the URL's host in lower case. Read
    /// from the URL's text, as the runner reads a job's host (`JobHost.hostRange`), when it is
    /// plain ASCII without escapes, which is nearly every request: Foundation's `host` parses and
    /// percent-decodes the URL again, and with `lowercased()` cost 1,600 instructions a request.
    /// Anything else goes that way.
    static func hostKey(of url: URL) -> String {
        var text = url.absoluteString
        let plain: String? = text.withUTF8 { bytes in
            guard let range = JobHost.hostRange(in: bytes, complete: true) else { return nil }
            let host = UnsafeBufferPointer(rebasing: bytes[range])
            guard !host.contains(where: { $0 == UInt8(ascii: "%") || $0 >= 0x80 }) else { return nil }
            return host.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) ? JobHost.lowercased(host) : String(decoding: host, as: UTF8.self)
        }
        return plain ?? url.host?.lowercased() ?? ""
    }
}

/// Stops reading a body the session no longer needs.
struct ExchangeStop: Error {}

/// What one exchange has seen so far, shared by the transport's callbacks.
final class ExchangeProgress: Sendable {
    private struct State {
        var head: TransportResponseHead?
        var outcome: Session.Exchange.Outcome?
        var bytes: Int64 = 0
        var discarded: Int64 = 0
        var decoder: ContentDecoder?
    }

    /// The exchange as it ended: read once, under one lock.
    struct Seen {
        var head: TransportResponseHead?
        var outcome: Session.Exchange.Outcome?
        var bytes: Int64
        /// Every body byte read: kept and discarded.
        var received: Int64
    }

    private let state = LockedBox(State())

    func setDecoder(_ decoder: ContentDecoder) { state.withLock { $0.decoder = decoder } }
    func setHead(_ head: TransportResponseHead) { state.withLock { $0.head = head } }
    func setOutcome(_ outcome: Session.Exchange.Outcome) { state.withLock { $0.outcome = outcome } }

    /// Whether a chunk's bytes are kept (no outcome decided at the head), and the decoder they go through.
    func forChunk() -> (accepting: Bool, decoder: ContentDecoder?) {
        state.withLock { ($0.outcome == nil, $0.decoder) }
    }

    /// Adds accepted bytes; returns the total, and the response's status.
    func add(_ count: Int) -> (total: Int64, status: Int) {
        state.withLock {
            $0.bytes += Int64(count)
            return ($0.bytes, $0.head?.status ?? 0)
        }
    }

    /// Counts discarded bytes; returns the total discarded.
    func discard(_ count: Int) -> Int64 {
        state.withLock {
            $0.discarded += Int64(count)
            return $0.discarded
        }
    }

    /// What the exchange saw, once it is over.
    func snapshot() -> Seen {
        state.withLock { Seen(head: $0.head, outcome: $0.outcome, bytes: $0.bytes, received: $0.bytes + $0.discarded) }
    }
}
