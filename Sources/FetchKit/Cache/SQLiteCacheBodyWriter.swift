import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// A stored entry that can't be served (its body went missing); the session treats it as a miss.
struct CacheMiss: Error {
    var reason: String
}

/// A body being stored by `SQLiteResponseCache`, one of two ways:
///
/// - **Linked**, when the job's sink is writing the same bytes to a file of its own (`save:`): the
///   writer only counts the bytes, and when the body is complete (`complete()`, before the sink
///   moves its file into place) it hard-links that file under its final name in `bodies/`. No
///   second copy is written. The file's size and modification time are recorded with the entry,
///   so an output edited in place later is a miss, never a wrong answer. Where a link is not
///   possible (another file system), the finished file is copied instead (in the kernel, `sendfile`).
/// - **Copied**, otherwise: the chunks go to a temporary file in `tmp/` as they arrive, and
///   `store` renames it into `bodies/`.
///
/// Either way the body is complete in `bodies/` before its index row is committed.
final class SQLiteCacheBodyWriter: CacheBodyWriter {
    /// Where the body is: the temporary file while copying, the final one once linked.
    let path: String
    /// The name under the cache directory the index row records (`bodies/xx/<random>`).
    let storageName: String
    private let bodiesDirectory: String
    /// `bodies/` open as a directory (-1 if it couldn't be), and the body's name under it
    /// (`xx/<name>`): linking relative to it walks two path components instead of the cache's
    /// whole path, which was most of a link's cost.
    private let bodiesDescriptor: Int32
    private let relativeName: String
    /// The sink's file to link, and its open descriptor (for `fstat`; never written or closed
    /// here); nil when copying.
    private let source: String?
    private let sourceDescriptor: Int32
    private let onFailure: @Sendable (_ directory: String, _ reason: String) -> Void
    private let state = LockedBox(State())
    private static let counter = LockedBox(0)

    private struct State {
        var fd: Int32 = -1
        var size: Int64 = 0
        /// The body is in `bodies/` under `storageName` (linked or copied there by `complete()`).
        var inPlace = false
        /// Nanoseconds since 1970 of the body file's last modification, once complete.
        var modified: Int64?
        var failed = false
    }

    /// - Parameters:
    ///   - directory: the cache directory (`tmp/` and `bodies/` are under it).
    ///   - bodies: `directory/bodies`, and that directory open, or -1.
    ///   - source: the file the job's sink is writing the same body to, to link instead of copying.
    ///   - onFailure: told about a body that could not be put in place (a directory and a reason).
    init(directory: String, bodies: String, bodiesDescriptor: Int32, sharing source: (path: String, descriptor: Int32)?,
         onFailure: @escaping @Sendable (_ directory: String, _ reason: String) -> Void) throws {
        self.onFailure = onFailure
        self.source = source?.path
        sourceDescriptor = source?.descriptor ?? -1
        let serial = Self.counter.withLock { $0 += 1; return $0 }
        let number = Hex.string(UInt64(serial))
        let name = UTF8Text.joined(Self.processTag, number)
        relativeName = UTF8Text.joined(String(number.suffix(1)), "/", name)  // 16 buckets filled in turn
        storageName = UTF8Text.joined("bodies/", relativeName)
        bodiesDirectory = bodies
        self.bodiesDescriptor = bodiesDescriptor
        if source != nil {
            path = UTF8Text.joined(directory, "/", storageName)
            return
        }
        path = UTF8Text.joined(directory, "/tmp/", name, ".tmp")
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

    var size: Int64 { state.withLock { $0.size } }
    /// Whether `complete()` put the body under its final name already.
    var isInPlace: Bool { state.withLock { $0.inPlace } }
    var modified: Int64? { state.withLock { $0.modified } }

    func write(_ chunk: ByteBuffer) throws {
        try state.withLock { s in
            if source == nil {
                guard s.fd >= 0 else { throw FetchError(.io, "'\(path)' is not open") }
                try FileIO.write(chunk, to: s.fd, path: path)
            }
            s.size += Int64(chunk.readableBytes)
        }
    }

    /// Linking: the sink's file holds the whole body now; link it (or copy it) under the final
    /// name. Copying: closes the temporary file. Either way records the body's size and time. A
    /// failure goes to `onFailure` (the store warns once per directory and reason) and leaves the
    /// writer `failed`: `store` then drops the body and the job goes on.
    func complete() {
        state.withLock { s in
            if s.modified != nil || s.failed { return }  // completed already
            do {
                try complete(&s)
            } catch {
                // Reported against `bodies/` (or `tmp/`) with the reason only: once, not once per response.
                s.failed = true
                let reason = (error as? Failure)?.reason ?? (error as? FetchError)?.message.components(separatedBy: ": ").last ?? "\(error)"
                onFailure(source == nil ? (path as NSString).deletingLastPathComponent : bodiesDirectory, reason)
            }
        }
    }

    var failed: Bool { state.withLock { $0.failed } }

    private struct Failure: Error {
        var reason: String

        init(_ code: Int32) {
            reason = String(cString: strerror(code))
        }
    }

    private func complete(_ s: inout State) throws {
        guard let source else {
            guard s.fd >= 0 else { throw Failure(EBADF) }
            defer { s.fd = -1 }
            var info = stat()
            guard fstat(s.fd, &info) == 0 else { throw Failure(errno) }
            s.modified = Self.nanoseconds(info.st_mtim)
            guard Glibc.close(s.fd) == 0 else { throw Failure(errno) }
            return
        }
        var linked = true
        let made = bodiesDescriptor >= 0 ? linkat(AT_FDCWD, source, bodiesDescriptor, relativeName, 0) : link(source, path)
        if made != 0 {
            linked = false
            if errno == ENOENT {
                // `bodies/xx/` is made on first use (and `bodies/` with it), by its whole path: the
                // directory open as `bodiesDescriptor` may have been removed meanwhile.
                let bucket = bodiesDirectory + "/" + relativeName.prefix(1)
                for directory in [bodiesDirectory, bucket] where mkdir(directory, 0o755) != 0 && errno != EEXIST {
                    throw Failure(errno)
                }
                if link(source, path) == 0 { linked = true } else { try Self.copy(source, to: path) }
            } else {
                try Self.copy(source, to: path)  // EXDEV (another file system), EPERM, EMLINK: a copy will do
            }
        }
        s.inPlace = true
        // A link is the sink's file itself: its open descriptor answers without a path lookup.
        var info = stat()
        guard (linked ? fstat(sourceDescriptor, &info) : stat(path, &info)) == 0, Int64(info.st_size) == s.size else {
            unlink(path)
            s.inPlace = false
            throw Failure(EIO)
        }
        s.modified = Self.nanoseconds(info.st_mtim)
    }

    func discard() {
        state.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = -1
            if source == nil || s.inPlace { unlink(path) }
            s.inPlace = false
        }
    }

    static func nanoseconds(_ time: timespec) -> Int64 {
        Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Copies `source` to a new file at `destination`.
    private static func copy(_ source: String, to destination: String) throws {
        let input = Glibc.open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw Failure(errno) }
        defer { Glibc.close(input) }
        let output = Glibc.open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw Failure(errno) }
        do {
            try FileIO.copy(from: input, to: output, path: destination)
            guard Glibc.close(output) == 0 else { throw Failure(errno) }
        } catch {
            Glibc.close(output)
            unlink(destination)
            throw error
        }
    }
}
