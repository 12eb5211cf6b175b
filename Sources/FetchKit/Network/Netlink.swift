import Foundation

/// Route netlink (rtnetlink, `man 7 rtnetlink`) as the network monitor reads it: messages about
/// links, addresses and routes, decoded from the kernel's byte layout (host byte order — little
/// endian on every Linux that Swift runs on — and 4-byte alignment). Only the fields reachability
/// needs are kept. Pure: the tests feed it messages recorded from a real kernel.
enum Netlink {
    // Message types (linux/netlink.h, linux/rtnetlink.h).
    static let noop: UInt16 = 1, error: UInt16 = 2, done: UInt16 = 3
    static let newLink: UInt16 = 16, delLink: UInt16 = 17, getLink: UInt16 = 18
    static let newAddress: UInt16 = 20, delAddress: UInt16 = 21, getAddress: UInt16 = 22
    static let newRoute: UInt16 = 24, delRoute: UInt16 = 25, getRoute: UInt16 = 26
    // Header flags.
    static let request: UInt16 = 0x1, dump: UInt16 = 0x300
    // Multicast groups to bind to: links, IPv4 and IPv6 addresses and routes.
    static let groups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400
    // Interface flags (linux/if.h).
    static let interfaceUp: UInt32 = 0x1, interfaceRunning: UInt32 = 0x40, interfaceLowerUp: UInt32 = 0x10000
    static let mainTable: UInt32 = 254
    static let unicastRoute: UInt8 = 1
    // Attributes.
    static let routeDestination: UInt16 = 1, routeOutputInterface: UInt16 = 4, routeMultipath: UInt16 = 9, routeTable: UInt16 = 15
    static let linkName: UInt16 = 3

    /// What one message says.
    enum Event: Equatable, Sendable {
        /// A link was added or changed, or removed. `administrativelyUp` is `IFF_UP` (`ip link set
        /// up`); `up` adds that the carrier is there (`IFF_RUNNING` or `IFF_LOWER_UP`).
        case link(index: Int32, name: String?, up: Bool, administrativelyUp: Bool)
        case linkRemoved(index: Int32)
        /// A route was added or removed (only unicast routes of the main table are reported).
        case route(Route, added: Bool)
        /// An address came or went; reachability follows routes, this only says something changed.
        case address(index: Int32, added: Bool)
        /// The end of a dump (`NLMSG_DONE`), or the kernel's answer to a request (`NLMSG_ERROR`, 0 = acknowledged).
        case done(sequence: UInt32)
        case failure(sequence: UInt32, errno: Int32)
    }

    /// A unicast route: where it leads (`destination`/`prefixLength`, 0 for a default route) and
    /// which interfaces it leaves through (several for a multipath route).
    struct Route: Hashable, Sendable {
        var family: UInt8
        var destination: [UInt8]
        var prefixLength: UInt8
        var interfaces: [Int32]
    }

    /// Every message in `bytes` (one datagram may hold several). Malformed or truncated messages
    /// end the parse: what came before them is returned.
    static func events(in bytes: [UInt8]) -> [Event] {
        var events: [Event] = []
        var offset = 0
        while offset + 16 <= bytes.count {
            let length = Int(u32(bytes, offset))
            guard length >= 16, offset + length <= bytes.count else { break }
            let type = u16(bytes, offset + 4)
            let sequence = u32(bytes, offset + 8)
            let body = Array(bytes[(offset + 16)..<(offset + length)])
            if let event = event(type: type, sequence: sequence, body: body) { events.append(event) }
            offset += align(length)
        }
        return events
    }

    private static func event(type: UInt16, sequence: UInt32, body: [UInt8]) -> Event? {
        switch type {
        case done:
            return .done(sequence: sequence)
        case error:
            guard body.count >= 4 else { return nil }
            let code = Int32(bitPattern: u32(body, 0))
            return code == 0 ? .done(sequence: sequence) : .failure(sequence: sequence, errno: -code)
        case newLink, delLink:
            guard body.count >= 16 else { return nil }
            let index = Int32(bitPattern: u32(body, 4))
            if type == delLink { return .linkRemoved(index: index) }
            let flags = u32(body, 8)
            let name = attributes(body, from: 16)[linkName].map { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let administrativelyUp = flags & interfaceUp != 0
            let up = administrativelyUp && flags & (interfaceRunning | interfaceLowerUp) != 0
            return .link(index: index, name: name, up: up, administrativelyUp: administrativelyUp)
        case newAddress, delAddress:
            guard body.count >= 8 else { return nil }
            return .address(index: Int32(bitPattern: u32(body, 4)), added: type == newAddress)
        case newRoute, delRoute:
            guard body.count >= 12 else { return nil }
            let family = body[0], prefixLength = body[1], routeType = body[7]
            let attributes = attributes(body, from: 12)
            let table = attributes[routeTable].flatMap { $0.count >= 4 ? u32($0, 0) : nil } ?? UInt32(body[4])
            guard table == mainTable, routeType == unicastRoute else { return nil }
            var interfaces: [Int32] = []
            if let oif = attributes[routeOutputInterface], oif.count >= 4 { interfaces.append(Int32(bitPattern: u32(oif, 0))) }
            if let hops = attributes[routeMultipath] { interfaces += nextHopInterfaces(hops) }
            let route = Route(family: family, destination: attributes[routeDestination] ?? [], prefixLength: prefixLength, interfaces: interfaces)
            return .route(route, added: type == newRoute)
        default:
            return nil
        }
    }

    /// `struct rtnexthop { len: u16, flags: u8, hops: u8, ifindex: i32 }` entries, each followed by its own attributes.
    private static func nextHopInterfaces(_ bytes: [UInt8]) -> [Int32] {
        var result: [Int32] = []
        var offset = 0
        while offset + 8 <= bytes.count {
            let length = Int(u16(bytes, offset))
            guard length >= 8 else { break }
            result.append(Int32(bitPattern: u32(bytes, offset + 4)))
            offset += align(length)
        }
        return result
    }

    /// The attributes (`struct rtattr { len: u16, type: u16 }` + data) from `start`, by type.
    static func attributes(_ body: [UInt8], from start: Int) -> [UInt16: [UInt8]] {
        var result: [UInt16: [UInt8]] = [:]
        var offset = start
        while offset + 4 <= body.count {
            let length = Int(u16(body, offset))
            guard length >= 4, offset + length <= body.count else { break }
            result[u16(body, offset + 2) & 0x3fff] = Array(body[(offset + 4)..<(offset + length)])  // without NLA_F_NESTED / NET_BYTEORDER
            offset += align(length)
        }
        return result
    }

    /// A dump request for links, addresses or routes of every family.
    static func dumpRequest(_ type: UInt16, sequence: UInt32) -> [UInt8] {
        // The header, then a family byte padded to the payload the kernel expects (ifinfomsg: 16, ifaddrmsg: 8, rtmsg: 12).
        let payload = type == getLink ? 16 : type == getAddress ? 8 : 12
        // Links without their counters (IFLA_EXT_MASK = RTEXT_FILTER_SKIP_STATS): a fifth of the bytes.
        let attributes = type == getLink ? 8 : 0
        var bytes: [UInt8] = []
        append32(&bytes, UInt32(16 + payload + attributes))
        append16(&bytes, type)
        append16(&bytes, request | dump)
        append32(&bytes, sequence)
        append32(&bytes, 0)
        bytes += [UInt8](repeating: 0, count: payload)  // family AF_UNSPEC
        if type == getLink {
            append16(&bytes, 8)
            append16(&bytes, 29)  // IFLA_EXT_MASK
            append32(&bytes, 1 << 3)  // RTEXT_FILTER_SKIP_STATS
        }
        return bytes
    }

    static func align(_ length: Int) -> Int { (length + 3) & ~3 }

    static func u16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    static func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }

    private static func append16(_ bytes: inout [UInt8], _ value: UInt16) { bytes += [UInt8(value & 0xff), UInt8(value >> 8)] }
    private static func append32(_ bytes: inout [UInt8], _ value: UInt32) {
        bytes += [UInt8(value & 0xff), UInt8(value >> 8 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 24)]
    }
}
