import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// A resumable download (SPEC §2.4): streams to `<destination>.part` with constant memory, records
/// the server's validators in the state store, and continues from the bytes on disk with
/// `Range: bytes=N-` and `If-Range` — after a dropped connection in the same run, or in a later run
/// after a crash, `kill -9` or SIGINT. The server's answer decides: `206` whose `Content-Range` starts
/// at the offset appends; `200` truncates and starts over (`download.restarted`); `416` checks the
/// `.part` against the recorded length. A finished download is length-checked, checksum-verified
/// (hashed while streaming, the prefix on disk first), fsynced and renamed into place. A rerun of a
/// finished download asks `If-None-Match` / `If-Modified-Since`, and a `304` is `up_to_date`.
public final class DownloadSink: ResponseSink {
    public let destination: String
    public var partPath: String { destination + ".part" }
    private let job: String?
    private let checksum: Checksum?
    private let store: StateStore?
    /// False for `--no-resume`: ignore `.part` files and recorded validators.
    private let resumes: Bool
    private let monitor: (any EventMonitor)?
    private let redactor: Redactor
    private let state = LockedBox(State())

    private struct State {
        var url = ""
        var fd: Int32 = -1
        /// What the current request asked for.
        var rangeStart: Int64?
        var conditional = false
        /// Where the current response's bytes start in the file, and how many were written.
        var offset: Int64 = 0
        var written: Int64 = 0
        var expectedTotal: Int64?
        var hasher: ChecksumHasher?
        var upToDate = false
        /// A `416` for a `.part` that already holds the whole file.
        var partIsComplete = false
        var record: DownloadRecord?
    }

    public init(destination: String, job: String? = nil, checksum: Checksum? = nil, store: StateStore? = nil, resumes: Bool = true,
                monitor: (any EventMonitor)? = nil, redactor: Redactor = Redactor()) {
        self.destination = destination
        self.job = job
        self.checksum = checksum
        self.store = store
        self.resumes = resumes
        self.monitor = monitor
        self.redactor = redactor
    }

    /// True when the server answered `304` to the conditional request: the file in place is current.
    public var isUpToDate: Bool { state.withLock { $0.upToDate } }

    // MARK: - ResponseSink

    /// `304` and `416` are answers to this sink's own conditional and range requests; `open` checks
    /// that it asked.
    public func handles(status: Int) -> Bool { status == 304 || status == 416 }

    /// The record belongs to the destination, whatever URL the job has today (a re-signed or
    /// rotated link to the same file): with a strong validator the `.part` resumes with `Range` and
    /// `If-Range`, and the server's `200` or `206` decides; without one, a different URL starts over
    /// (`url_changed`), the same URL asks for the whole file again.
    public func prepare(_ request: BuiltRequest, attempt: Int) async throws -> BuiltRequest {
        var request = request
        // Ranges count the stored bytes, so no content coding (without Accept-Encoding any would do, RFC 9110 §12.5.3).
        request.headers.update(name: "Accept-Encoding", value: "identity")
        let url = redactor.redact(request.url.absoluteString)
        let record = resumes ? try? store?.download(at: destination) : nil
        let partSize = FileIO.size(partPath) ?? 0
        let finished = FileManager.default.fileExists(atPath: destination)
        let urlChanged = state.withLock { s -> Bool in
            s.url = url
            s.record = record
            s.rangeStart = nil
            s.conditional = false
            s.partIsComplete = false
            s.upToDate = false
            guard let record else { return false }
            let sameURL = record.url == url
            if record.completed, finished, partSize == 0 {
                // Is the finished file current? From another URL, only an entity tag vouches for the same file.
                if let etag = record.etag {
                    request.headers.update(name: "If-None-Match", value: etag)
                } else if sameURL, let lastModified = record.lastModified {
                    request.headers.update(name: "If-Modified-Since", value: lastModified)
                }
                s.conditional = request.headers["If-None-Match"] != nil || request.headers["If-Modified-Since"] != nil
            } else if partSize > 0, let validator = record.rangeValidator {
                request.headers.update(name: "Range", value: "bytes=\(partSize)-")
                request.headers.update(name: "If-Range", value: validator)
                s.rangeStart = partSize
            } else if partSize > 0, !sameURL {
                s.record = nil
                return true
            }
            return false
        }
        if urlChanged {
            // Nothing shows the file at the new URL is the one the `.part` holds the start of.
            try restart(offset: partSize, reason: "url_changed")
        }
        return request
    }

    public func open(_ head: TransportResponseHead) throws {
        let (rangeStart, conditional, record) = state.withLock { ($0.rangeStart, $0.conditional, $0.record) }
        switch head.status {
        case 304:
            guard conditional else { throw FetchError(.status, "HTTP 304 to a request that was not conditional", status: 304) }
            state.withLock { $0.upToDate = true }
            return
        case 416:
            guard let rangeStart else { throw FetchError(.status, "HTTP 416 to a request without a range", status: 416) }
            let total = Self.contentRange(head.headers["Content-Range"])?.total ?? record?.totalLength
            if let total, total == rangeStart {
                state.withLock {
                    $0.partIsComplete = true
                    $0.offset = rangeStart
                    $0.expectedTotal = total
                }
                return
            }
            try restart(offset: rangeStart, reason: "not_satisfiable")  // 416, and the .part is not the recorded size
            throw FetchError(.truncated, "HTTP 416 for bytes from \(rangeStart); starting over", status: 416)
        case 206:
            guard let rangeStart else { throw FetchError(.status, "HTTP 206 to a request without a range", status: 206) }
            guard let range = Self.contentRange(head.headers["Content-Range"]), range.start == rangeStart else {
                try restart(offset: rangeStart, reason: "range_mismatch")  // Content-Range doesn't start at the .part's end
                throw FetchError(.truncated, "Content-Range '\(head.headers["Content-Range"] ?? "")' does not start at \(rangeStart); starting over", status: 206)
            }
            try openPart(truncating: false, offset: rangeStart, total: range.total)
            monitor?.downloadDidResume(job: job, offset: rangeStart)
        default:
            if let rangeStart {
                // A 200 to `If-Range`: the file changed, unless it still has the validator we sent (the server ignores ranges).
                let sent = record?.rangeValidator
                let same = sent != nil && (head.headers["ETag"] == sent || (head.headers["ETag"] == nil && head.headers["Last-Modified"] == sent))
                monitor?.downloadDidRestart(job: job, offset: rangeStart, reason: same ? "range_ignored" : "changed")
            }
            try openPart(truncating: true, offset: 0, total: head.expectedLength)
        }
        let fresh = state.withLock { s in
            DownloadRecord(destination: destination, url: s.url, etag: head.headers["ETag"], lastModified: head.headers["Last-Modified"],
                           date: head.headers["Date"], totalLength: s.expectedTotal)
        }
        state.withLock { $0.record = fresh }
        try store?.saveDownload(fresh)
    }

    public func write(_ chunk: ByteBuffer) throws {
        try state.withLock { s in
            guard s.fd >= 0 else { throw FetchError(.io, "'\(partPath)' is not open") }
            try FileIO.write(chunk, to: s.fd, path: partPath)
            s.written += Int64(chunk.readableBytes)
            if s.hasher != nil { chunk.withUnsafeReadableBytes { s.hasher!.update($0) } }
        }
    }

    public func finish() async throws {
        if isUpToDate { return }
        let (size, total, digest) = try state.withLock { s -> (Int64, Int64?, String?) in
            defer { s.fd = -1 }
            if s.fd >= 0 {
                if fsync(s.fd) != 0 {
                    let code = errno
                    Glibc.close(s.fd)
                    throw FileIO.error(code, "cannot flush '\(partPath)'")
                }
                guard Glibc.close(s.fd) == 0 else { throw FileIO.error(errno, "cannot close '\(partPath)'") }
            }
            let size = s.partIsComplete ? s.offset : s.offset + s.written
            if s.partIsComplete, let checksum {
                var hasher = ChecksumHasher(checksum.algorithm)
                try FileIO.read(partPath, length: size) { hasher.update($0) }
                s.hasher = hasher
            }
            return (size, s.expectedTotal, s.hasher?.finalize())
        }
        if let total, size != total {
            throw FetchError(.truncated, "the download has \(size) of \(total) bytes")
        }
        let record = state.withLock { s in s.record ?? DownloadRecord(destination: destination, url: s.url) }
        try DownloadCompletion.place(part: partPath, at: destination, size: size, checksum: checksum, digest: digest,
                                     record: record, store: store, monitor: monitor, job: job)
    }

    /// Keeps the `.part` (a later attempt or run resumes from it).
    public func abandon() async {
        state.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = -1
        }
    }

    // MARK: - Helpers

    private func openPart(truncating: Bool, offset: Int64, total: Int64?) throws {
        try FileIO.createDirectory(containing: partPath)
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncating ? O_TRUNC : O_APPEND)
        let fd = Glibc.open(partPath, flags, 0o644)
        guard fd >= 0 else { throw FileIO.error(errno, "cannot open '\(partPath)'") }
        var hasher = checksum.map { ChecksumHasher($0.algorithm) }
        if hasher != nil, offset > 0 {
            do {
                try FileIO.read(partPath, length: offset) { hasher!.update($0) }
            } catch {
                Glibc.close(fd)
                throw error
            }
        }
        state.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = fd
            s.offset = offset
            s.written = 0
            s.expectedTotal = total
            s.hasher = hasher
        }
    }

    /// Deletes the `.part` and its record, so the next attempt starts from zero.
    private func restart(offset: Int64, reason: String) throws {
        monitor?.downloadDidRestart(job: job, offset: offset, reason: reason)
        unlink(partPath)
        try? store?.deleteDownload(at: destination)
    }

    /// `bytes START-END/TOTAL` (TOTAL may be `*`) or `bytes */TOTAL`.
    static func contentRange(_ header: String?) -> (start: Int64?, total: Int64?)? {
        guard let header, header.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = header.dropFirst(6).split(separator: "/", maxSplits: 1).map(String.init)
        guard spec.count == 2 else { return nil }
        let total = Int64(spec[1])
        if spec[0] == "*" { return (nil, total) }
        let bounds = spec[0].split(separator: "-")
        guard bounds.count == 2, let start = Int64(bounds[0]) else { return nil }
        return (start, total)
    }
}
