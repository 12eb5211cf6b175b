import Foundation
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// Tells when the network comes and goes, after Alamofire's `NetworkReachabilityManager`: on Linux
/// it listens on a route netlink socket (links, IPv4 and IPv6 addresses and routes) and calls the
/// network reachable when a link that is up carries a default route — or, for a given address, a
/// route that covers it.
///
/// Use it to know *when to try again*, never to decide *whether to send*: a request is always
/// sent, and only when it fails with a network-class error does the monitor's verdict say whether to
/// wait for the network rather than spend a retry (that is what the runner does). No polling and no
/// thread of its own: the socket is read by a dispatch read source as the kernel writes to it.
/// (It was a SwiftNIO pipe channel: making the process's first one cost 9 of a one-job run's 87
/// million instructions, most of them the Swift runtime's first-use conformance scans, on the two
/// cores the run's start needs; a read source costs a few hundred thousand.)
///
/// ```swift
/// let monitor = try await NetworkMonitor.start()
/// monitor.onChange { status in print("network:", status) }
/// if monitor.status == .notReachable { await monitor.waitUntilReachable() }
/// await monitor.stop()
/// ```
public final class NetworkMonitor: Sendable {
    public enum Status: String, Sendable {
        case reachable
        case notReachable = "not_reachable"
    }

    private let state: LockedBox<Inner>
    /// Reads the socket's change notifications; cancelling it closes the socket. (Dispatch's
    /// sources are thread-safe, `cancel` from any thread, but not marked `Sendable` on Linux.)
    private nonisolated(unsafe) let source: (any DispatchSourceRead)?

    fileprivate struct Inner {
        var network = NetworkState()
        var status: Status = .notReachable
        var listeners: [Int: @Sendable (Status) -> Void] = [:]
        var nextListener = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
        /// `nextChange()` callers, by id (removed when cancelled).
        var changeWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextChangeWaiter = 0
    }

    /// A monitor fed by hand (tests, or a program with its own source of network events).
    init(state network: NetworkState) {
        state = LockedBox(Inner(network: network, status: network.isReachable() ? .reachable : .notReachable))
        source = nil
    }

    private init(source: any DispatchSourceRead, box: LockedBox<Inner>) {
        state = box
        self.source = source
    }

    /// Opens the netlink socket, reads the kernel's current links and routes, and listens for
    /// changes on one of `group`'s event loops. Throws when the socket can't be opened (a sandbox
    /// without netlink): the caller then goes without a monitor.
    public static func start(on group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> NetworkMonitor {
        try await begin(on: group.next()).get()
    }

    /// `start` without a task: all of it happens on the monitor's own queue, so a caller busy on
    /// another loop (`fetchctl run` loading its jobs file) has the monitor ready when it asks. The
    /// dumps block (briefly, with a deadline): on that queue, not a task's thread or an event loop.
    /// Not on SwiftNIO's thread pool, which nothing else of a run uses: starting it made two
    /// threads, for one call.
    static func begin(on loop: any EventLoop) -> EventLoopFuture<NetworkMonitor> {
        let started = loop.makePromise(of: NetworkMonitor.self)
        let queue = DispatchQueue(label: "fetchctl.network-monitor")
        queue.async {
            started.completeWith(Result { () throws -> NetworkMonitor in
                let fd = try NetlinkSocket.open()
                let initial: NetworkState
                do {
                    initial = try NetlinkSocket.dumpState(fd)
                    guard fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0 else { throw FileIO.error(errno, "cannot listen for network changes on a netlink socket") }
                } catch {
                    Glibc.close(fd)
                    throw error
                }
                let box = LockedBox(Inner(network: initial, status: initial.isReachable() ? .reachable : .notReachable))
                let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
                source.setEventHandler { Self.readChanges(fd, into: box) }
                source.setCancelHandler { Glibc.close(fd) }
                source.activate()
                return NetworkMonitor(source: source, box: box)
            })
        }
        return started.futureResult
    }

    /// The notifications waiting on the socket, each datagram a batch of netlink messages, applied
    /// in order; returns when the socket has no more (it is non-blocking).
    private static func readChanges(_ fd: Int32, into box: LockedBox<Inner>) {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                apply(Netlink.events(in: Array(buffer[..<count])), to: box)
            } else if count < 0, errno == EINTR {
                continue
            } else {
                // EAGAIN: all read. ENOBUFS: the kernel dropped notifications (a burst); the next
                // ones still come, and the state they carry is applied as they do.
                return
            }
        }
    }

    /// The monitor `begin` is starting, stopped once started: for a caller that no longer needs it.
    static func discard(_ starting: EventLoopFuture<NetworkMonitor>) {
        starting.whenSuccess { monitor in monitor.source?.cancel() }
    }

    /// Whether any destination is reachable (a link that is up with a default route).
    public var status: Status { state.withLock { $0.status } }

    /// Whether `host` can be reached: for an IP address, a route through a link that is up covers
    /// it; for a name (which would need DNS to place), the default-route answer (`status`).
    public func isReachable(host: String) -> Bool {
        let network = state.withLock { $0.network }
        if let address = Self.address(host) { return network.isReachable(address) }
        return network.isReachable()
    }

    /// Calls `listener` on every change of `status` (from an event loop). Returns a token for `removeListener`.
    @discardableResult
    public func onChange(_ listener: @escaping @Sendable (Status) -> Void) -> Int {
        state.withLock { s in
            s.nextListener += 1
            s.listeners[s.nextListener] = listener
            return s.nextListener
        }
    }

    public func removeListener(_ token: Int) {
        state.withLock { s in s.listeners[token] = nil }
    }

    /// Returns once `status` is `.reachable` (at once if it is).
    public func waitUntilReachable() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.status == .reachable { return true }
                s.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Returns at the next change the kernel reports to any link or route (or when the calling task
    /// is cancelled): for a caller that waits for one host's route rather than for `status`.
    public func nextChange() async {
        let id = state.withLock { s -> Int in
            s.nextChangeWaiter += 1
            return s.nextChangeWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let cancelled = state.withLock { s -> Bool in
                    if Task.isCancelled { return true }
                    s.changeWaiters[id] = continuation
                    return false
                }
                if cancelled { continuation.resume() }
            }
        } onCancel: {
            state.withLock { s in s.changeWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Tasks in `nextChange` now.
    var changeWaiters: Int { state.withLock { $0.changeWaiters.count } }

    /// Tasks in `waitUntilReachable` now.
    var waiters: Int { state.withLock { $0.waiting.count } }

    /// Stops listening; waiters are released.
    public func stop() async {
        source?.cancel()
        let waiting = state.withLock { s in
            defer { s.waiting = [] }
            return s.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Applies kernel events (from the socket, or a test) and tells listeners about a change.
    func apply(_ events: [Netlink.Event]) {
        Self.apply(events, to: state)
    }

    fileprivate static func apply(_ events: [Netlink.Event], to box: LockedBox<Inner>) {
        let (changed, listeners, waiting) = box.withLock { s -> (Status?, [@Sendable (Status) -> Void], [CheckedContinuation<Void, Never>]) in
            let before = s.network
            for event in events { s.network.apply(event) }
            var waiting: [CheckedContinuation<Void, Never>] = []
            if s.network != before {
                waiting = Array(s.changeWaiters.values)
                s.changeWaiters = [:]
            }
            let status: Status = s.network.isReachable() ? .reachable : .notReachable
            guard status != s.status else { return (nil, [], waiting) }
            s.status = status
            if status == .reachable {
                waiting += s.waiting
                s.waiting = []
            }
            return (status, Array(s.listeners.values), waiting)
        }
        for continuation in waiting { continuation.resume() }
        guard let changed else { return }
        for listener in listeners { listener(changed) }
    }

    /// `host` as 4 or 16 address bytes when it is an IP literal (brackets allowed).
    static func address(_ host: String) -> [UInt8]? {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
