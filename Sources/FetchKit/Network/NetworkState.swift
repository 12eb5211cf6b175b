import Foundation

/// What the kernel has told the monitor so far — links and their state, unicast routes of the
/// main table — and the reachability that follows: a destination is reachable when a route covers
/// it (a default route covers everything) and leaves through a link that is up. Pure value: the
/// monitor applies netlink events to it; the tests apply recorded ones.
struct NetworkState: Sendable, Equatable {
    var links: [Int32: Bool] = [:]
    var routes: Set<Netlink.Route> = []

    mutating func apply(_ event: Netlink.Event) {
        switch event {
        case .link(let index, _, let up, let administrativelyUp):
            links[index] = up
            // Taking a link down (not losing its carrier) makes the kernel drop its IPv4 routes
            // without a message; they come back only with a RTM_NEWROUTE.
            if !administrativelyUp { routes = routes.filter { $0.interfaces != [index] } }
        case .linkRemoved(let index):
            links[index] = nil
            routes = routes.filter { !$0.interfaces.contains(index) }
        case .route(let route, let added):
            if added { routes.insert(route) } else { routes.remove(route) }
        case .address, .done, .failure:
            break
        }
    }

    /// Whether `address` (4 or 16 bytes; nil for "anywhere") has a route through a link that is up.
    func isReachable(_ address: [UInt8]? = nil) -> Bool {
        routes.contains { route in
            guard route.interfaces.contains(where: { links[$0] == true }) else { return false }
            guard let address else { return route.prefixLength == 0 }
            return Self.covers(route, address)
        }
    }

    static func covers(_ route: Netlink.Route, _ address: [UInt8]) -> Bool {
        let family: UInt8 = address.count == 4 ? 2 : 10  // AF_INET, AF_INET6
        guard route.family == family else { return false }
        if route.prefixLength == 0 { return true }
        guard route.destination.count == address.count, Int(route.prefixLength) <= address.count * 8 else { return false }
        var bits = Int(route.prefixLength)
        for (a, b) in zip(route.destination, address) {
            if bits >= 8 {
                guard a == b else { return false }
                bits -= 8
            } else {
                let mask: UInt8 = bits == 0 ? 0 : ~UInt8(0) << (8 - bits)
                return a & mask == b & mask
            }
        }
        return true
    }
}
