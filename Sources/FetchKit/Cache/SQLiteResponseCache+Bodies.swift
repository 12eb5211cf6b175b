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

    /// Linked where that is safe, else copied with `sendfile`: the body never passes through this
    /// process's memory.
    ///
    /// A link makes the saved file and the stored body one file, as a cold run's save already is
    /// (see `SQLiteCacheBodyWriter`): no bytes are written, and an output edited in place later is
    /// a miss (its size or time changed). It is made only for a body no other file shares (one
    /// link: a second saved file must never change when the first is edited) whose owner and mode
    /// are the save's own (a body the cache wrote itself is private, 0600, and stays so).
    public func copyBody(of entry: CachedResponse, into file: String?, descriptor: Int32) async throws -> Bool {
        let (fd, path, info) = try await openBody(of: entry)
        defer { Glibc.close(fd) }
        if let file, info.st_nlink == 1, Self.link(path, over: file, matching: info, of: descriptor) { return true }
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
        let path = entry.storageName.isEmpty ? try await bodyPath(of: entry) : directory + "/" + entry.storageName
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            await remove(entry)
            throw CacheMiss(reason: "the stored body is missing")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, Int64(info.st_size) == entry.bodySize else {
            Glibc.close(fd)
            await remove(entry)
            throw CacheMiss(reason: "the stored body has the wrong size")
        }
        if let modified = entry.storageModified, SQLiteCacheBodyWriter.nanoseconds(info.st_mtim) != modified {
            Glibc.close(fd)
            await remove(entry)
            throw CacheMiss(reason: "the stored body was modified")
        }
        return (fd, path, info)
    }

    /// Replaces `file` (open as `descriptor`) by a hard link to `body` (described by `info`) when
    /// the two have the same owner and mode and nothing else links the body meanwhile: linked
    /// under a sibling name, then renamed over `file`, so `file` is never missing. False, with
    /// `file` untouched, otherwise.
    private static func link(_ body: String, over file: String, matching info: stat, of descriptor: Int32) -> Bool {
        var staged = stat()
        guard fstat(descriptor, &staged) == 0, staged.st_uid == info.st_uid, staged.st_mode == info.st_mode,
              staged.st_dev == info.st_dev else { return false }
        let sibling = file + "~"
        guard Glibc.link(body, sibling) == 0 else { return false }
        // Two saves of the same stored body at once: only one may share it.
        var linked = stat()
        guard stat(sibling, &linked) == 0, linked.st_nlink == 2, rename(sibling, file) == 0 else {
            unlink(sibling)
            return false
        }
        return true
    }
}
