import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// A stored entry that can't be served (its body went missing); the session treats it as a miss.
struct CacheMiss: Error {
    var reason: String
}

/// A body being stored: a temporary file in the cache's `tmp/`, renamed into place by `store`.
final class SQLiteCacheBodyWriter: CacheBodyWriter {
    let path: String
    private let state = LockedBox<(fd: Int32, size: Int64)>((-1, 0))
    private static let counter = LockedBox(0)

    init(directory: String) throws {
        let serial = Self.counter.withLock { $0 += 1; return $0 }
        path = (directory as NSString).appendingPathComponent("\(getpid())-\(serial)-\(SQLiteResponseCache.randomName().prefix(8)).tmp")
        var fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd < 0, errno == ENOENT {
            try FileIO.createDirectory(containing: path)
            fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        }
        guard fd >= 0 else { throw FileIO.error(errno, "cannot create '\(path)'") }
        state.withLock { $0.fd = fd }
    }

    var size: Int64 { state.withLock { $0.size } }

    func write(_ chunk: ByteBuffer) throws {
        try state.withLock { s in
            guard s.fd >= 0 else { throw FetchError(.io, "'\(path)' is not open") }
            try FileIO.write(chunk, to: s.fd, path: path)
            s.size += Int64(chunk.readableBytes)
        }
    }

    func close() throws {
        try state.withLock { s in
            guard s.fd >= 0 else { throw FetchError(.io, "'\(path)' is not open") }
            defer { s.fd = -1 }
            guard Glibc.close(s.fd) == 0 else { throw FileIO.error(errno, "cannot close '\(path)'") }
        }
    }

    func discard() {
        state.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = -1
        }
        unlink(path)
    }
}
