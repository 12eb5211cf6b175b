import Foundation
import Testing
@testable import FetchKit

/// Route netlink messages recorded from a real kernel (`Tests/Fixtures/netlink/record.py`: a veth
/// pair in a fresh network namespace, addresses and default routes added and removed, the link
/// taken down and deleted), replayed through the parser and the reachability rules; and the real
/// socket's first answer checked against `/proc`.
@Suite struct NetworkMonitorTests {
    struct Datagram: Decodable {
        var step: String
        var hex: String
        var bytes: [UInt8] {
            var out: [UInt8] = []
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 2)
                out.append(UInt8(hex[index..<next], radix: 16)!)
                index = next
            }
            return out
        }
    }

    static let recorded: [Datagram] = {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/netlink/recorded.json")
        return (try? JSONDecoder().decode([Datagram].self, from: Data(contentsOf: path))) ?? []
    }()

    /// The state after every datagram up to and including the last one of `step`.
    func state(through step: String, skippingDumps: Bool = true) -> NetworkState {
        var state = NetworkState()
        let last = Self.recorded.lastIndex { $0.step == step }!
        for datagram in Self.recorded[...last] where !(skippingDumps && datagram.step.hasSuffix("dump")) {
            for event in Netlink.events(in: datagram.bytes) { state.apply(event) }
        }
        return state
    }

    @Test func theRecordingIsThere() {
        #expect(Self.recorded.count > 20)
    }

    @Test(arguments: [
        ("lo up", false), ("address added", false), ("default route added", true), ("ipv6 default route added", true),
        ("ipv6 default route deleted", true), ("default route deleted", false), ("default route added again", true),
        ("dummy down", false), ("dummy deleted", false),
    ])
    func changesReplayToTheirReachability(step: String, reachable: Bool) {
        #expect(state(through: step).isReachable() == reachable, "after \(step)")
    }

    /// The subnet of the link's own address is reachable without a default route; a host beyond
    /// it is not until the default route is there.
    @Test func aRouteToTheHostIsEnough() {
        let connected = state(through: "address added")
        #expect(connected.isReachable([10, 1, 0, 9]))
        #expect(!connected.isReachable([10, 9, 9, 9]))
        #expect(state(through: "default route added").isReachable([10, 9, 9, 9]))
        let v6 = state(through: "ipv6 default route added")
        #expect(v6.isReachable([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]))
        #expect(!state(through: "ipv6 default route deleted").isReachable([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]))
    }

    /// The dumps alone (what the monitor reads when it starts) give the same state as the changes.
    @Test func dumpsDescribeTheLinksAndRoutes() throws {
        var state = NetworkState()
        var names: [Int32: String] = [:]
        for datagram in Self.recorded where datagram.step.hasSuffix("dump") {
            for event in Netlink.events(in: datagram.bytes) {
                if case .link(let index, let name?, _, _) = event { names[index] = name }
                state.apply(event)
            }
        }
        #expect(Set(names.values) == ["lo", "d0", "d1"])
        let d0 = try #require(names.first { $0.value == "d0" }?.key)
        let defaults = state.routes.filter { $0.prefixLength == 0 }
        #expect(Set(defaults.map(\.family)) == [2, 10])
        #expect(defaults.allSatisfy { $0.interfaces == [d0] })
        #expect(state.isReachable())
        #expect(Netlink.events(in: Self.recorded.last { $0.step == "route dump" }!.bytes).contains { if case .done(2) = $0 { true } else { false } })
    }

    @Test func truncatedDatagramsKeepWhatCameBefore() {
        let whole = Self.recorded.first { $0.step == "link dump" }!.bytes
        let events = Netlink.events(in: whole)
        #expect(!events.isEmpty)
        #expect(Netlink.events(in: Array(whole.prefix(whole.count - 1))).count < events.count)
        #expect(Netlink.events(in: Array(whole.prefix(10))).isEmpty)
    }

    @Test func dumpRequestsAreWhatTheKernelExpects() {
        let request = Netlink.dumpRequest(Netlink.getRoute, sequence: 7)
        #expect(request.count == 28)
        #expect(Netlink.u32(request, 0) == 28 && Netlink.u16(request, 4) == 26 && Netlink.u16(request, 6) == 0x301 && Netlink.u32(request, 8) == 7)
        let links = Netlink.dumpRequest(Netlink.getLink, sequence: 1)
        #expect(links.count == 40 && Netlink.u32(links, 0) == 40 && Netlink.u16(links, 34) == 29, "with IFLA_EXT_MASK")
    }

    /// A monitor fed the recorded changes tells its listeners and wakes its waiters.
    @Test func listenersAndWaitersFollowTheStatus() async {
        let monitor = NetworkMonitor(state: NetworkState())
        #expect(monitor.status == .notReachable)
        let seen = LockedBox<[NetworkMonitor.Status]>([])
        monitor.onChange { status in seen.withLock { $0.append(status) } }
        let waiter = Task { await monitor.waitUntilReachable() }
        // The waiter is registered before anything is reachable (a task may start late: wait for it).
        while monitor.waiters == 0 { try? await Task.sleep(for: .milliseconds(5)) }
        for datagram in Self.recorded where !datagram.step.hasSuffix("dump") {
            monitor.apply(Netlink.events(in: datagram.bytes))
        }
        await waiter.value
        #expect(seen.withLock { $0 } == [.reachable, .notReachable, .reachable, .notReachable])
        #expect(monitor.status == .notReachable)
        #expect(monitor.isReachable(host: "10.1.0.9") == false)
    }

    /// The real socket's first answer matches the kernel's routing table as `/proc` shows it.
    @Test func theRealSocketAgreesWithProc() async throws {
        let monitor = try await NetworkMonitor.start()
        #expect(monitor.status == (Self.procHasDefaultRoute() ? .reachable : .notReachable))
        await monitor.stop()
    }

    /// A default route on an interface that is up, in `/proc/net/route` or `/proc/net/ipv6_route`.
    static func procHasDefaultRoute() -> Bool {
        func up(_ interface: String) -> Bool {
            let flags = (try? String(contentsOfFile: "/sys/class/net/\(interface)/flags", encoding: .utf8))
                .flatMap { UInt32($0.trimmingCharacters(in: .whitespacesAndNewlines).dropFirst(2), radix: 16) } ?? 0
            let carrier = (try? String(contentsOfFile: "/sys/class/net/\(interface)/carrier", encoding: .utf8))?.hasPrefix("1") ?? false
            return flags & 1 != 0 && carrier
        }
        let v4 = (try? String(contentsOfFile: "/proc/net/route", encoding: .utf8)) ?? ""
        for line in v4.split(separator: "\n").dropFirst() {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if f.count > 7, f[1] == "00000000", f[7] == "00000000", UInt32(f[3], radix: 16).map({ $0 & 1 != 0 }) == true, up(String(f[0])) { return true }
        }
        let v6 = (try? String(contentsOfFile: "/proc/net/ipv6_route", encoding: .utf8)) ?? ""
        for line in v6.split(separator: "\n") {
            let f = line.split(separator: " ")
            if f.count == 10, f[0] == String(repeating: "0", count: 32), f[1] == "00", f[9] != "lo",
               UInt32(f[8], radix: 16).map({ $0 & 1 != 0 && $0 & 0x200 == 0 }) == true, up(String(f[9])) { return true }
        }
        return false
    }
}
