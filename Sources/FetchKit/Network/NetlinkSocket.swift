import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The route netlink socket: opened and subscribed to link, address and route changes, then asked
/// for the current links and routes (dumps), read here before the socket goes to an event loop.
enum NetlinkSocket {
    static let family: Int32 = 16  // AF_NETLINK
    static let routeProtocol: Int32 = 0  // NETLINK_ROUTE

    /// A subscribed route netlink socket; throws `FetchError(.io)` when the system has none for us.
    static func open() throws -> Int32 {
        let fd = socket(family, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), routeProtocol)
        guard fd >= 0 else { throw FileIO.error(errno, "cannot open a netlink socket") }
        // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; __u32 nl_pid; __u32 nl_groups; }
        var address = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: UInt16(family)) { address.replaceSubrange(0..<2, with: $0) }
        withUnsafeBytes(of: Netlink.groups) { address.replaceSubrange(8..<12, with: $0) }
        let bound = address.withUnsafeBytes { raw in
            Glibc.bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard bound == 0 else {
            let code = errno
            Glibc.close(fd)
            throw FileIO.error(code, "cannot listen for network changes on a netlink socket")
        }
        // The dumps below are read with a deadline: the kernel answers at once or not at all.
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Links, then routes (addresses only tell that something changed, which the events that
    /// follow them say too), each dump read to its end. Change notifications that arrive meanwhile
    /// are applied in order with the dump.
    static func dumpState(_ fd: Int32) throws -> NetworkState {
        var state = NetworkState()
        for (sequence, type) in [(UInt32(1), Netlink.getLink), (2, Netlink.getRoute)] {
            let request = Netlink.dumpRequest(type, sequence: sequence)
            let sent = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
            guard sent == request.count else { throw FileIO.error(errno, "cannot ask the kernel for its network state") }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var finished = false
            while !finished {
                let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { throw FileIO.error(count < 0 ? errno : EIO, "cannot read the kernel's network state") }
                for event in Netlink.events(in: Array(buffer[0..<count])) {
                    switch event {
                    case .done(let done) where done == sequence:
                        finished = true
                    case .failure(let failed, let code) where failed == sequence:
                        throw FileIO.error(code, "the kernel refused to list its network state")
                    default:
                        state.apply(event)
                    }
                }
            }
        }
        return state
    }
}
