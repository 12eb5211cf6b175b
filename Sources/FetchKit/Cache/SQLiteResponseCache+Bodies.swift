import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Serving stored bodies: checked against what the index recorded before a byte is served, and
/// put into a `save:`'s file by link or kernel copy where possible.
extension SQLiteResponseCache {
    public func readBody(of entry: CachedResponse, _ body: (ByteBuffer) throws -> Void) async throws {
        let (fd, _, _) = try await openBody(of: entry)
        defer { Glibc.close(fd) }
        var remaining = entry.bodySize
        let allocator = ByteBufferAllocator()
        while remaining > 0 {
            var buffer = allocator.buffer(capacity: Int(min(remaining, 256 * 1024)))
            var readError: Int32 = 0
            let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { raw in
                let n = Glibc.read(fd, raw.baseAddress!, min(raw.count, Int(remaining)))
                if n < 0 { readError = errno }
                return max(0, n)  // a negative count would trap in ByteBuffer
            }
            if readError == EINTR { continue }
            guard count > 0 else {
                await remove(entry)
                throw CacheMiss(reason: "the stored body could not be read")
            }
            remaining -= Int64(count)
            try body(buffer)
        }
    }

    /// A link makes the saved file and the stored body one file, as a cold run's save already is
    /// (see `SQLiteCacheBodyWriter`): no bytes are written, and an output edited in place later is
    /// a miss (its size or time changed). It is made only for a body no other file shares (one
    /// link: a second saved file must never change when the first is edited) whose owner and mode
    /// are those of a file the save would create (a body the cache wrote itself is private, 0600,
    /// and stays so).
    public func linkBody(of entry: CachedResponse, to destination: String, staging: String) async throws -> Bool {
        guard let mode = Self.savedFileMode else { return false }
        // By name, not opened: a stored body is never rewritten, only removed, and a body removed
        // meanwhile fails the link, which then falls back to a copy (or a miss).
        let (directory, name) = try await bodyLocation(of: entry)
        var info = stat()
        guard fstatat(directory, name, &info, 0) == 0 else {
            await remove(entry)
            throw CacheMiss(reason: "the stored body is missing")
        }
        try await check(info, of: entry)
        // The destination is this very file already (linked by the run that stored it, or by an
        // earlier hit), unchanged since (size and time checked): nothing to write at all.
        var existing = stat()
        if info.st_nlink == 2, stat(destination, &existing) == 0, existing.st_ino == info.st_ino, existing.st_dev == info.st_dev { return true }
        guard info.st_nlink == 1, info.st_uid == geteuid(), info.st_mode & 0o7777 == mode else { return false }
        return Self.link(at: directory, name, to: destination, staging: staging)
    }

    /// Where the body of `entry` is, for the `*at` calls: relative to the cache directory when
    /// that is open, else its whole path.
    private func bodyLocation(of entry: CachedResponse) async throws -> (directory: Int32, name: String) {
        if directoryDescriptor >= 0, !entry.storageName.isEmpty { return (directoryDescriptor, entry.storageName) }
        return (AT_FDCWD, try await bodyPath(of: entry))
    }

    /// Copied with `sendfile`: the body never passes through this process's memory.
    public func copyBody(of entry: CachedResponse, descriptor: Int32) async throws -> Bool {
        let (fd, _, _) = try await openBody(of: entry)
        defer { Glibc.close(fd) }
        // A failed copy is the job's own file failing (full, over its size limit): the job's error,
        // as a failed write is when streaming; the entry stays. A short one is a body cut meanwhile.
        let copied = try FileIO.copy(from: fd, to: descriptor, length: entry.bodySize, path: "the job's file")
        guard copied == entry.bodySize else {
            await remove(entry)
            throw CacheMiss(reason: "the stored body could not be read")
        }
        return true
    }

    /// Opens the stored body of `entry` after checking it is still the one stored: its size and
    /// (for a body linked to a job's output, which may be edited in place) its modification time.
    /// A body that fails is removed with its entry and read as a miss.
    private func openBody(of entry: CachedResponse) async throws -> (descriptor: Int32, path: String, info: stat) {
        let path = try await bodyPath(of: entry)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            await remove(entry)
            throw CacheMiss(reason: "the stored body is missing")
        }
        var info = stat()
        do {
            guard fstat(fd, &info) == 0 else { throw CacheMiss(reason: "the stored body is missing") }
            try await check(info, of: entry)
        } catch {
            Glibc.close(fd)
            throw error
        }
        return (fd, path, info)
    }

    /// The body described by `info` is the one `entry` recorded: its size, and (for a body linked
    /// to a job's output, which may be edited in place) its modification time.
    private func check(_ info: stat, of entry: CachedResponse) async throws {
        guard Int64(info.st_size) == entry.bodySize else {
            await remove(entry)
            throw CacheMiss(reason: "the stored body has the wrong size")
        }
        if let modified = entry.storageModified, SQLiteCacheBodyWriter.nanoseconds(info.st_mtim) != modified {
            await remove(entry)
            throw CacheMiss(reason: "the stored body was modified")
        }
    }

    /// Links `body` (relative to `directory`) at `destination`: directly when nothing is there (one system call), else under
    /// `staging` and renamed over it, so `destination` is never missing. Two saves of the same
    /// stored body at once: only one may share it (the link count says so), the other copies.
    /// False, with `destination` untouched, when no link was kept.
    private static func link(at directory: Int32, _ body: String, to destination: String, staging: String) -> Bool {
        var target = destination
        var made = FileIO.linkat(directory, body, AT_FDCWD, destination) == 0
        if !made, errno == ENOENT, (try? FileIO.createDirectory(containing: destination)) != nil {
            made = FileIO.linkat(directory, body, AT_FDCWD, destination) == 0
        }
        if !made {
            guard errno == EEXIST, FileIO.linkat(directory, body, AT_FDCWD, staging) == 0 else { return false }
            target = staging
        }
        var linked = stat()
        guard stat(target, &linked) == 0, linked.st_nlink == 2, target == destination || rename(staging, destination) == 0 else {
            unlink(target)
            return false
        }
        return true
    }

    /// The permission bits a `save:` creates its file with (0644 less the process's umask, read
    /// once from /proc/self/status: `umask(2)` can only be read by changing it); nil when unknown,
    /// and bodies are then copied.
    static let savedFileMode: mode_t? = {
        let fd = Glibc.open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fd, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        let status = String(decoding: bytes, as: UTF8.self)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
              let umask = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) else { return nil }
        return 0o644 & ~umask
    }()
}
