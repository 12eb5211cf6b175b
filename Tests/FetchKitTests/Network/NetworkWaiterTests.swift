import Foundation
import FetchKitTesting
import NIOCore
import Testing
@testable import FetchKit

/// Waiting out an outage: a monitor fed the netlink messages recorded from a real kernel (the
/// default route removed and added back), the waiter's decisions, and a session whose requests
/// meet the outage. The real link going down is `.ci/run`'s network-namespace test.
@Suite struct NetworkWaiterTests {
    /// A monitor in the state after `step` of the recording.
    func monitor(at step: String) -> NetworkMonitor {
        let monitor = NetworkMonitor(state: NetworkState())
        feed(monitor, through: step)
        return monitor
    }

    /// Applies the recorded (non-dump) datagrams after the monitor's current position up to `step`.
    func feed(_ monitor: NetworkMonitor, from start: String? = nil, through step: String) {
        let recorded = NetworkMonitorTests.recorded.filter { !$0.step.hasSuffix("dump") }
        let first = start.map { s in recorded.firstIndex { $0.step == s }! } ?? 0
        let last = recorded.lastIndex { $0.step == step }!
        for datagram in recorded[first...last] { monitor.apply(Netlink.events(in: datagram.bytes)) }
    }

    static var outage: FetchError {
        var error = FetchError(.connection, "connect(descriptor:addr:size:): Network is unreachable (errno: 101)", url: "http://10.9.9.9/x")
        error.isNetworkDown = true
        return error
    }

    @Test func anOrdinaryFailureIsTheRetryPolicysBusiness() async {
        let waiter = NetworkWaiter(monitor: monitor(at: "default route deleted"), maxWait: .seconds(60), events: NetworkEvents())
        #expect(await waiter.decide(after: FetchError(.connection, "connection refused"), host: "10.9.9.9") == .retry)
    }

    /// The monitor says the network is there and stays so for the settling time: an ordinary failure.
    @Test func aFailureWhileReachableIsRetriedAsUsual() async {
        let waiter = NetworkWaiter(monitor: monitor(at: "default route added"), maxWait: .seconds(60), events: NetworkEvents(),
                                   settle: .milliseconds(50))
        let started = ContinuousClock.now
        #expect(await waiter.decide(after: Self.outage, host: "10.9.9.9") == .retry)
        #expect(ContinuousClock.now - started >= .milliseconds(50))
    }

    /// The connect fails before the monitor hears of the outage; the news comes within the settling
    /// time, the request waits, and goes again once the route is back.
    @Test func theRequestWaitsForTheNetworkAndIsSentAgain() async throws {
        let events = NetworkEvents()
        let network = monitor(at: "default route added")
        let waiter = NetworkWaiter(monitor: network, maxWait: .seconds(60), events: events, settle: .seconds(5))
        waiter.start()
        let decision = Task { await waiter.decide(after: Self.outage, host: "10.9.9.9") }
        while network.changeWaiters == 0 { try await Task.sleep(for: .milliseconds(5)) }  // settling: waiting for the monitor's news
        feed(network, from: "ipv6 default route deleted", through: "default route deleted")
        #expect(network.status == .notReachable)
        while network.changeWaiters == 0 { try await Task.sleep(for: .milliseconds(5)) }  // now waiting for the network
        feed(network, from: "default route added again", through: "default route added again")
        #expect(await decision.value == .resend)
        #expect(events.log == ["lost", "restored"])
        waiter.stop()
    }

    @Test func pastMaxWaitItGivesUp() async {
        let events = NetworkEvents()
        let waiter = NetworkWaiter(monitor: monitor(at: "default route deleted"), maxWait: .milliseconds(200), events: events,
                                   settle: .milliseconds(10))
        waiter.start()
        #expect(events.log == ["lost"], "a run that starts without the network says so")
        let started = ContinuousClock.now
        #expect(await waiter.decide(after: Self.outage, host: "10.9.9.9") == .giveUp)
        #expect(ContinuousClock.now - started >= .milliseconds(150))
        // Counted from network.lost: the next failure gives up at once.
        let again = ContinuousClock.now
        #expect(await waiter.decide(after: Self.outage, host: "10.9.9.9") == .giveUp)
        #expect(ContinuousClock.now - again < .milliseconds(150))
        waiter.stop()
    }

    @Test func aStoredResponseStandsInAtOnce() async {
        let waiter = NetworkWaiter(monitor: monitor(at: "default route deleted"), maxWait: .seconds(60), events: NetworkEvents())
        #expect(await waiter.decide(after: Self.outage, host: "10.9.9.9", hasFallback: true) == .failNow)
    }

    /// Through a session: the request meets the outage (as a connect does while the route is gone),
    /// waits, and is sent again when the route is back without spending its one retry; the body
    /// comes from the local server.
    @Test func aSessionWaitsWithoutSpendingARetry() async throws {
        let server = try await TestServer.start()
        let network = monitor(at: "default route deleted")
        let events = NetworkEvents()
        let waiter = NetworkWaiter(monitor: network, maxWait: .seconds(60), events: events, settle: .milliseconds(10))
        waiter.start()
        let transport = OutageTransport(while: network)
        let session = Session(transport: transport, eventMonitors: [events], networkWaiter: waiter)
        var options = RequestOptions()
        var retry = RetryOptions()
        retry.limit = 1
        options.retryPolicy = RetryPolicy(retry)
        let request = Task { try await session.data(server.baseURL + "/bytes/1000?seed=3", options: options) }
        while network.changeWaiters == 0 { try await Task.sleep(for: .milliseconds(5)) }  // the request failed and waits for the network
        #expect(transport.sent == 1)
        feed(network, from: "default route added again", through: "default route added again")
        let response = try await request.value
        #expect(response.data == Data(GeneratedBytes.bytes(0..<1000, seed: 3)))
        #expect(response.response.attempts == 1, "re-sent after the outage, not retried")
        #expect(events.retries == 0)
        #expect(transport.sent == 2)
        waiter.stop()
        try await transport.real.shutdown()
        try await server.shutdown()
    }

    @Test func pastMaxWaitASessionFailsOffline() async throws {
        let server = try await TestServer.start()
        let network = monitor(at: "default route deleted")
        let waiter = NetworkWaiter(monitor: network, maxWait: .milliseconds(100), events: NetworkEvents(), settle: .milliseconds(10))
        waiter.start()
        let transport = OutageTransport(while: network)
        let session = Session(transport: transport, networkWaiter: waiter)
        await #expect(throws: FetchError.self) {
            do {
                _ = try await session.data(server.baseURL + "/bytes/10")
            } catch let error as FetchError {
                #expect(error.code == .offline)
                throw error
            }
        }
        #expect(RunSummary(runID: "r", results: [JobResult(job: "j", outcome: .failed, error: FetchError(.offline, "down"))],
                           duration: .zero, stop: nil).exitStatus.rawValue == 75)
        waiter.stop()
        try await transport.real.shutdown()
        try await server.shutdown()
    }
}

extension NetworkWaiterTests {
    /// A transfer that stalls while the network is gone waits instead of failing its read timeout
    /// (TCP carries on when the link is back), and past max_wait fails `offline`.
    @Test(arguments: [(60_000, true), (150, false)])
    func aStallDuringAnOutageIsNotAReadTimeout(maxWaitMilliseconds: Int, completes: Bool) async throws {
        let server = try await TestServer.start()
        let waiter = NetworkWaiter(monitor: monitor(at: "default route deleted"), maxWait: .milliseconds(maxWaitMilliseconds),
                                   events: NetworkEvents())
        waiter.start()
        let session = Session(networkWaiter: waiter)
        let options = RequestOptions(timeouts: TransportTimeouts(connect: .seconds(2), read: .milliseconds(200), total: nil), retryPolicy: nil)
        let url = server.baseURL + "/bytes/100000?seed=4&stall_after=20000&stall_ms=1200"
        if completes {
            let response = try await session.data(url, options: options)
            #expect(response.data == Data(GeneratedBytes.bytes(0..<100_000, seed: 4)), "the stall (6 read timeouts long) was waited out")
        } else {
            await #expect(throws: FetchError.self) {
                do {
                    _ = try await session.data(url, options: options)
                } catch let error as FetchError {
                    #expect(error.code == .offline)
                    throw error
                }
            }
        }
        waiter.stop()
        try await session.shutdown()
        try await server.shutdown()
    }
}

extension NetworkWaiterTests {
    /// During an outage a job whose stored response may stand in (`stale_if_error`) is served from
    /// the cache at once: it does not wait for the network (max_wait here is a minute).
    @Test func aStaleResponseStandsInWithoutWaiting() async throws {
        let server = try await TestServer.start()
        let network = monitor(at: "default route added")
        let waiter = NetworkWaiter(monitor: network, maxWait: .seconds(60), events: NetworkEvents(), settle: .milliseconds(10))
        waiter.start()
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let cache = try SQLiteResponseCache(directory: directory)
        let transport = OutageTransport(while: network)
        let session = Session(transport: transport, cache: cache, networkWaiter: waiter)
        var options = RequestOptions()
        options.cache = RequestCacheOptions(staleIfError: .seconds(86_400))
        // Stored with max-age=0: stale at once, so the next request goes to the network.
        let url = server.baseURL + "/cache/outage?max_age=0&fixed=1&size=500"
        let first = try await session.data(url, options: options)
        #expect(first.response.cache == .miss)
        feed(network, from: "ipv6 default route deleted", through: "default route deleted")
        let started = ContinuousClock.now
        let second = try await session.data(url, options: options)
        #expect(second.response.cache == .stale)
        #expect(second.data == first.data)
        #expect(ContinuousClock.now - started < .seconds(30), "served at once, not after a wait for the network")
        waiter.stop()
        try await transport.real.shutdown()
        try await server.shutdown()
    }
}

extension NetworkWaiterTests {
    /// A transfer cut just after the network came back (its connection died while it was gone) is
    /// sent again without spending a retry — once per outage: cut again, the retry policy decides.
    @Test(arguments: [(1, true), (2, false)])
    func aTransferTheOutageCutIsSentAgainOnce(cuts: Int, succeeds: Bool) async throws {
        let server = try await TestServer.start()
        let network = monitor(at: "default route deleted")
        // A window far longer than the test: with every suite running at once the process can
        // stall for seconds, and the test is about what happens inside it, not its length.
        let waiter = NetworkWaiter(monitor: network, maxWait: .seconds(60), events: NetworkEvents(), settle: .milliseconds(10),
                                   aftermath: .seconds(300))
        waiter.start()
        feed(network, from: "default route added again", through: "default route added again")
        #expect(network.status == .reachable)
        let session = Session(networkWaiter: waiter)
        var options = RequestOptions()
        var retry = RetryOptions()
        retry.limit = 0
        options.retryPolicy = RetryPolicy(retry)
        let url = server.baseURL + "/bytes/100000?seed=6&drop_after=20000&key=cut\(cuts)&times=\(cuts)"
        let result = await Result(catching: { try await session.data(url, options: options) })
        if succeeds {
            let response = try #require(try? result.get(), "\(result)")
            #expect(response.data == Data(GeneratedBytes.bytes(0..<100_000, seed: 6)))
            #expect(response.response.attempts == 1)
        } else {
            #expect(throws: FetchError.self) { try result.get() }
        }
        #expect(server.state.requests(pathPrefix: "/bytes").count == 2)
        waiter.stop()
        try await session.shutdown()
        try await server.shutdown()
    }
}

/// The real AsyncHTTPClient transport, failing sends with the error a connect meets while the
/// network is down — while `monitor` says so (ENETUNREACH can't be had on loopback without root).
final class OutageTransport: HTTPTransport {
    let real = AsyncHTTPClientTransport()
    private let monitor: NetworkMonitor
    private let state = LockedBox(0)

    init(while monitor: NetworkMonitor) { self.monitor = monitor }

    var sent: Int { state.withLock { $0 } }

    func send(_ request: BuiltRequest, options: TransportOptions, onHead: @escaping @Sendable (TransportResponseHead) throws -> Void,
              onChunk: @escaping @Sendable (ByteBuffer) throws -> Void) async throws {
        state.withLock { $0 += 1 }
        if monitor.status == .notReachable { throw NetworkWaiterTests.outage }
        try await real.send(request, options: options, onHead: onHead, onChunk: onChunk)
    }
}

final class NetworkEvents: EventMonitor {
    private let box = LockedBox<(log: [String], retries: Int)>(([], 0))
    var log: [String] { box.withLock { $0.log } }
    var retries: Int { box.withLock { $0.retries } }
    func networkWasLost() { box.withLock { $0.log.append("lost") } }
    func networkWasRestored(after down: Duration) { box.withLock { $0.log.append("restored") } }
    func requestIsRetrying(_ request: RequestInfo, retry: RetryInfo) { box.withLock { $0.retries += 1 } }
}

/// Without a network monitor (no netlink socket in a sandbox) the run says so once it has started,
/// and goes on with its ordinary retries.
@Suite struct NoNetworkMonitorTests {
    final class Recorder: EventMonitor {
        private let box = LockedBox<[String]>([])
        var events: [String] { box.withLock { $0 } }
        func runDidStart(_ run: RunInfo) { box.withLock { $0.append("run.started") } }
        func networkMonitorDidFail(_ message: String) { box.withLock { $0.append("network.warning: " + message) } }
        func jobDidFinish(_ result: JobResult) { box.withLock { $0.append("job.finished \(result.outcome.rawValue)") } }
    }

    @Test func theRunWarnsAndGoesOn() async throws {
        let server = try await TestServer.start()
        let fixture = try ConfigFixture(["jobs.yaml": "version: 1\nsettings: {output_dir: out}\njobs:\n  - {id: one, url: \"${BASE}/bytes/100\", save: one.bin}\n"])
        let config = fixture.load("jobs.yaml", environment: ["BASE": server.baseURL], mode: .run)
        var options = Runner.Options()
        options.networkProblem = "no network monitor, outages are retried as usual: cannot open a netlink socket: Operation not permitted"
        let recorder = Recorder()
        let summary = await Runner(config: config, plan: try RunPlan(config: config), options: options, monitors: [recorder]).run()
        #expect(summary.exitStatus == .success)
        #expect(recorder.events == ["run.started", "network.warning: " + options.networkProblem!, "job.finished succeeded"])
        try await server.shutdown()
    }
}
