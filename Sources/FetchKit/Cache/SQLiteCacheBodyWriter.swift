import Foundation
import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A stored entry that can't be served (its body went missing); the session treats it as a miss.
struct CacheMiss: Error {
    var reason: String
}

/// A body being stored by `SQLiteResponseCache`, one of two ways:
///
/// - **Shared**, when the job's sink saves the same bytes (`save:`): the sink itself creates the
///   file under its final name in `bodies/` (`sharedFile`), writes the body there and, once it is
///   complete, hard-links it to the job's destination instead of moving a temporary file into
///   place. The body is written once, and storing it costs no system call a save without the
///   cache doesn't make. The file's size and modification time are recorded with the entry, so an
///   output edited in place later is a miss, never a wrong answer.
/// - **Copied**, otherwise: the chunks go to a temporary file in `tmp/` as they arrive, and
///   `store` renames it into `bodies/`.
///
/// Either way the body is complete in `bodies/` before its index row is committed.
final class SQLiteCacheBodyWriter: CacheBodyWriter {
    /// The temporary file while copying; nil when shared (the body's path is then `path`).
    private let temporaryPath: String?
    /// The cache directory's path (a shared body's `path` is made from it only when asked for:
    /// only messages and a failed link need it, and every stored response made it).
    private let directory: String
    /// The name under the cache directory the index row records (`bodies/x/<name>`).
    let storageName: String
    /// The cache directory open (-1 if it isn't): `storageName` relative to it walks three path
    /// components, not the cache's whole path.
    private let descriptor: Int32
    /// Told about a body that could not be kept (once per directory and reason). Held strongly:
    /// a writer lives for one response, and the cache holds no writer.
    private let owner: SQLiteResponseCache
    private let state = LockedBox(State())
    /// Bodies named by this process so far: an atomic add, not a lock, for every stored response.
    private static let counter = Atomic<Int>(0)

    /// Where the body is: the temporary file while copying, the final one when shared.
    var path: String { temporaryPath ?? UTF8Text.joined(directory, "/", storageName) }

    /// The file the sink writes, when shared (the final name); nil when copying.
    var sharedFile: SharedBodyFile? {
        temporaryPath == nil ? SharedBodyFile(directory: descriptor, name: storageName, under: directory) : nil
    }

    private struct State {
        /// The temporary file when copying; the sink's descriptor of the shared file (not ours to close).
        var fd: Int32 = -1
        var size: Int64 = 0
        /// The body is in `bodies/` under `storageName` (shared, or copied there by `store`).
        var inPlace = false
        /// Nanoseconds since 1970 of the body file's last modification, once complete.
        var modified: Int64?
        var failed = false
    }

    /// - Parameters:
    ///   - directory: the cache directory (`tmp/` and `bodies/` are under it).
    ///   - descriptor: `directory` open, or -1 (then `shared` must be false).
    ///   - shared: the job's sink writes the body to `sharedFile` itself.
    ///   - owner: the cache, told about a body that could not be kept.
    init(directory: String, descriptor: Int32, shared: Bool, owner: SQLiteResponseCache) throws {
        self.owner = owner
        self.directory = directory
        self.descriptor = descriptor
        let serial = Self.counter.add(1, ordering: .relaxed).newValue
        storageName = Self.name(serial)
        if shared {
            temporaryPath = nil
            return
        }
        let path = UTF8Text.joined(directory, "/tmp/", Self.processTag, UTF8Text.joined(String(serial, radix: 16), ".tmp"))
        temporaryPath = path
        var fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd < 0, errno == ENOENT {
            try FileIO.createDirectory(containing: path)
            fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        }
        guard fd >= 0 else { throw FileIO.error(errno, "cannot create '\(path)'") }
        state.withLock { $0.fd = fd }
    }

    /// Names are this tag and a counter: unique among the processes sharing a cache without a
    /// random draw (a system call) per body.
    private static let processTag = Hex.string(UInt64.random(in: .min ... .max))

    /// `bodies/<b>/<processTag><serial>`: the serial in hex without leading zeros, in one of 16
    /// buckets filled in turn (its last digit), written into one string with no others made first.
    static func name(_ serial: Int) -> String {
        let value = UInt64(truncatingIfNeeded: serial)
        let digits = max(1, (67 - value.leadingZeroBitCount) / 4)  // hex digits of value (1 for 0)
        let tag = processTag
        return String(unsafeUninitializedCapacity: 9 + tag.utf8.count + digits) { buffer in
            var offset = UTF8Text.copy("bodies/", into: buffer, at: 0)
            buffer[offset] = Hex.digit(value & 15)
            buffer[offset + 1] = UInt8(ascii: "/")
            offset = UTF8Text.copy(tag, into: buffer, at: offset + 2)
            for index in 0..<digits {
                buffer[offset + index] = Hex.digit(value >> UInt64(4 * (digits - 1 - index)) & 15)
            }
            return offset + digits
        }
    }

    var size: Int64 { state.withLock { $0.size } }

    func sharedFileOpened(_ descriptor: Int32) {
        state.withLock { $0.fd = descriptor }
    }

    func write(_ chunk: ByteBuffer) throws {
        try state.withLock { s in
            if let path = temporaryPath {
                guard s.fd >= 0 else { throw FetchError(.io, "'\(path)' is not open") }
                try FileIO.write(chunk, to: s.fd, path: path)
            }
            s.size += Int64(chunk.readableBytes)
        }
    }

    /// The whole body is written: records its size and time (shared: the sink's file, which is
    /// complete now; copying: closes the temporary file). A failure goes to the cache (which
    /// warns once per directory and reason) and leaves the writer `failed`: `store` then drops
    /// the body and the job goes on.
    func complete() {
        state.withLock { completeOnce(&$0) }
    }

    /// The complete body as the index row records it (completing it if the sink has not): its
    /// size, modification time and whether it is under its final name; nil when it failed. One
    /// lock for what `store` asked in five.
    func completed() -> (size: Int64, modified: Int64?, inPlace: Bool)? {
        state.withLock { s in
            completeOnce(&s)
            return s.failed ? nil : (s.size, s.modified, s.inPlace)
        }
    }

    private func completeOnce(_ s: inout State) {
        if s.modified != nil || s.failed { return }  // completed already
        do {
            try complete(&s)
        } catch {
            // Reported with the reason only: once, not once per response.
            s.failed = true
            let reason = (error as? Failure)?.reason ?? (error as? FetchError)?.message.components(separatedBy: ": ").last ?? "\(error)"
            owner.report(temporaryPath.map { ($0 as NSString).deletingLastPathComponent } ?? owner.bodiesPath, "cannot store responses: \(reason)")
        }
    }

    private struct Failure: Error {
        var reason: String

        init(_ code: Int32) {
            reason = String(cString: strerror(code))
        }
    }

    private func complete(_ s: inout State) throws {
        var info = stat()
        if temporaryPath == nil {
            // The sink's own descriptor (never closed here) when it said, else the name.
            let found = s.fd >= 0 ? fstat(s.fd, &info) : descriptor >= 0 ? fstatat(descriptor, storageName, &info, 0) : stat(path, &info)
            s.fd = -1
            guard found == 0 else { throw Failure(errno) }
            guard Int64(info.st_size) == s.size else { throw Failure(EIO) }
            s.inPlace = true
        } else {
            guard s.fd >= 0 else { throw Failure(EBADF) }
            defer { s.fd = -1 }
            guard fstat(s.fd, &info) == 0 else { throw Failure(errno) }
            guard Glibc.close(s.fd) == 0 else { throw Failure(errno) }
        }
        s.modified = Self.nanoseconds(info.st_mtim)
    }

    func discard() {
        state.withLock { s in
            // A shared file's descriptor is the sink's to close.
            if s.fd >= 0, temporaryPath != nil { Glibc.close(s.fd) }
            s.fd = -1
            // A shared file is the sink's too: once linked at its destination, only the cache's name goes.
            if temporaryPath == nil, descriptor >= 0 { unlinkat(descriptor, storageName, 0) } else { unlink(path) }
            s.inPlace = false
        }
    }

    static func nanoseconds(_ time: timespec) -> Int64 {
        Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
