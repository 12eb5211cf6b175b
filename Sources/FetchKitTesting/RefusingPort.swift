import Glibc

/// A TCP port on 127.0.0.1 that refuses every connection for as long as this value lives: a socket
/// bound to it that never listens. Binding and closing a server to free a port raced with the
/// other tests, whose servers (port 0) could be given the same port a moment later; a bound port is
/// never given to anyone else.
public final class RefusingPort: @unchecked Sendable {
    public let port: Int
    private let descriptor: Int32

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RefusingPortError.socket(errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0 else {
            let failure = errno
            close(fd)
            throw RefusingPortError.socket(failure)
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}

public enum RefusingPortError: Error {
    case socket(Int32)
}
