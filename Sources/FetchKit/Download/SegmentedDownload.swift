import CFileSystem
import Foundation
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// One download over several connections (`segments: N`, aria2c's `--split`): the file is cut into
/// N ranges fetched at once into one `<destination>.part` of the file's length (checked against the
/// free space, its blocks reserved beside the transfers), each written at its offset.
///
/// A `HEAD` asks first: only a file whose length is known, whose server takes ranges
/// (`Accept-Ranges: bytes`) and which has a validator that `If-Range` can carry (a strong `ETag`, or
/// a `Last-Modified` the response's `Date` makes strong) is split; anything else, or a file too
/// small for two segments of `minimumSegment`, goes over one connection (`run` returns nil and the
/// caller uses a `DownloadSink`). Every segment is a request of its own through the session: the
/// route's retry, timeouts, auth and per-host limit apply to each, and a retry continues where the
/// segment stopped. The state store records every segment's progress (after the bytes are written,
/// never before), so a run after `kill -9` continues each one; the `If-Range` on every request
/// makes a file that changed in between come back whole (`200`): the pieces are dropped and one
/// connection fetches the file again, as it does from a server that ignores ranges.
/// At the end the file's length and checksum are verified, it is fsynced and renamed into place.
final class SegmentedDownload: Sendable {
    let destination: String
    var partPath: String { destination + ".part" }
    private let job: String
    private let segments: Int
    private let checksum: Checksum?
    private let store: StateStore?
    private let resumes: Bool
    private let monitor: (any EventMonitor)?
    private let redactor: Redactor

    /// No segment is smaller than this (aria2c's `--min-split-size` is 20 MiB; a loopback or LAN
    /// server fills a connection much sooner).
    static let minimumSegment: Int64 = 1 << 20
    /// A segment's progress is recorded every time this much more of it is on disk.
    static let progressStep: Int64 = 4 << 20

    /// What a finished download did: the last segment's status, the bytes received over all
    /// connections, and the requests it took (the `HEAD` and every segment's attempts).
    struct Outcome {
        var status: Int
        var bytes: Int64
        var requests: Int
    }

    init(destination: String, job: String, segments: Int, checksum: Checksum?, store: StateStore?, resumes: Bool,
         monitor: (any EventMonitor)?, redactor: Redactor) {
        self.destination = destination
        self.job = job
        self.segments = segments
        self.checksum = checksum
        self.store = store
        self.resumes = resumes
        self.monitor = monitor
        self.redactor = redactor
    }

    /// Downloads the file over several connections; nil when it should go over one instead.
    func run(_ request: some RequestConvertible & Sendable, options: RequestOptions, session: Session) async throws -> Outcome? {
        let record = resumes ? try? store?.download(at: destination) : nil
        // A finished download: one conditional request says whether it is current (a `DownloadSink`).
        if let record, record.completed, FileManager.default.fileExists(atPath: destination), FileIO.size(partPath) == nil { return nil }
        let recorded = resumes ? (try? store?.segments(at: destination)) ?? [] : []
        // A `.part` one connection began resumes as it began.
        if record != nil, recorded.isEmpty, FileIO.size(partPath) != nil { return nil }
        var requests = 0
        var plan: (record: DownloadRecord, segments: [DownloadSegment])
        let resumed = resumablePlan(record, recorded)
        if let resumed {
            plan = resumed
        } else {
            unlink(partPath)
            try? store?.deleteDownload(at: destination)
            let probe = ProbeSink()
            var headOptions = options
            headOptions.decodesContent = false
            let response = try await session.execute(request, options: headOptions, sink: probe)
            requests += response.attempts
            guard let total = probe.splittableLength(response.head), let made = self.plan(total: total, url: response.request.url, head: response.head)
            else { return nil }
            plan = made
        }
        let (fd, isNew) = try openPart(length: plan.record.totalLength ?? 0)
        var closed = false
        defer { if !closed { Glibc.close(fd) } }
        let total = plan.record.totalLength ?? 0
        let alreadyDone = plan.segments.reduce(0) { $0 + $1.done }
        monitor?.downloadDidSplit(job: job, segments: plan.segments.count, total: total, done: alreadyDone)
        let validator = plan.record.rangeValidator ?? ""
        let segmentOptions = { var o = options; o.decodesContent = false; return o }()
        let sinks = plan.segments.filter { !$0.isComplete }.map {
            SegmentSink(segment: $0, total: total, validator: validator, fd: fd, part: partPath, destination: destination, store: store)
        }
        var bytes: Int64 = 0
        var status = 206
        do {
            try await withThrowingTaskGroup(of: Response?.self) { group in
                if isNew, Self.reservesBlocks(at: partPath) {
                    // The blocks are reserved beside the transfers, on a thread of its own, so the first
                    // range needn't wait for the whole file's allocation; a disk that fills up meanwhile
                    // still stops every segment at once (disk_full), not at 90%.
                    let path = partPath
                    group.addTask {
                        try await NIOThreadPool.singleton.runIfActive { try Self.reserve(fd, length: total, path: path) }
                        return nil
                    }
                }
                for sink in sinks {
                    group.addTask { try await session.execute(request, options: segmentOptions, sink: sink) }
                }
                for try await case let response? in group {
                    requests += response.attempts
                    bytes += response.bytes
                    status = response.head.status
                }
            }
        } catch {
            guard sinks.contains(where: \.sawWholeFile) else { throw error }
            // The whole file came back to a ranged request: a plan made by this run's HEAD met a
            // server that ignores ranges; a recorded one, a file that changed since. Either way
            // the pieces go, and one connection fetches the file as it is now.
            monitor?.downloadDidRestart(job: job, offset: alreadyDone + sinks.reduce(0) { $0 + $1.received },
                                        reason: resumed != nil ? "changed" : "range_ignored")
            unlink(partPath)
            try? store?.deleteDownload(at: destination)
            return nil
        }
        closed = true
        try finish(fd, total: total, record: plan.record)
        return Outcome(status: status, bytes: bytes, requests: requests)
    }

    // MARK: - Planning

    /// The plan an earlier run left, if the `.part` and the records still match it.
    private func resumablePlan(_ record: DownloadRecord?, _ recorded: [DownloadSegment]) -> (record: DownloadRecord, segments: [DownloadSegment])? {
        guard let record, !record.completed, let total = record.totalLength, record.rangeValidator != nil,
              !recorded.isEmpty, recorded.last?.end == total - 1, FileIO.size(partPath) == total else { return nil }
        return (record, recorded)
    }

    /// Cuts `total` bytes into segments and records the plan; nil when one connection is the better choice.
    private func plan(total: Int64, url: URL, head: TransportResponseHead) -> (record: DownloadRecord, segments: [DownloadSegment])? {
        let record = DownloadRecord(destination: destination, url: redactor.redact(url.absoluteString), etag: head.headers["ETag"],
                                    lastModified: head.headers["Last-Modified"], date: head.headers["Date"], totalLength: total)
        guard record.rangeValidator != nil else { return nil }
        let count = Int(min(Int64(segments), total / Self.minimumSegment))
        guard count > 1 else { return nil }
        let size = (total + Int64(count) - 1) / Int64(count)
        let planned = (0..<count).map { i in
            DownloadSegment(index: i, start: Int64(i) * size, end: min(total, Int64(i + 1) * size) - 1)
        }
        try? store?.saveDownload(record)
        try? store?.saveSegments(planned, at: destination)
        return (record, planned)
    }

    // MARK: - The file

    /// Opens the `.part` of `length` bytes, sizing it when new (then `isNew`: `reserve` should follow).
    private func openPart(length: Int64) throws -> (fd: Int32, isNew: Bool) {
        try FileIO.createDirectory(containing: partPath)
        let fd = Glibc.open(partPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileIO.error(errno, "cannot open '\(partPath)'") }
        guard FileIO.size(partPath) != length else { return (fd, false) }
        do {
            try Self.checkSpace(for: length, at: partPath)
        } catch {
            Glibc.close(fd)
            unlink(partPath)
            throw error
        }
        guard ftruncate(fd, off_t(length)) == 0 else {
            let code = errno
            Glibc.close(fd)
            unlink(partPath)
            throw FileIO.error(code, "cannot size '\(partPath)' to \(length) bytes")
        }
        return (fd, true)
    }

    /// `disk_full` at once when the file system has less free space than the file needs.
    private static func checkSpace(for length: Int64, at path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        var space = statvfs()
        guard statvfs(directory, &space) == 0 else { return }
        let free = Int64(space.f_bavail) * Int64(space.f_frsize)
        if free < length { throw FileIO.error(ENOSPC, "'\(directory)' has \(free) bytes free; the download needs \(length)") }
    }

    /// Whether a new `.part`'s blocks are reserved. Not on tmpfs (memory): there, reserving means
    /// zero-filling every page, as costly as writing the file once more (260 ms of CPU for a GiB),
    /// while a disk file system only marks its extents.
    private static func reservesBlocks(at path: String) -> Bool {
        fk_is_memory_file_system((path as NSString).deletingLastPathComponent) != 1
    }

    /// Reserves the file's blocks (`posix_fallocate`), so a full disk fails the download now. Safe
    /// beside the segments' writes: allocation keeps the bytes already written. Where the file
    /// system can't reserve (EOPNOTSUPP), the sized file has to do.
    private static func reserve(_ fd: Int32, length: Int64, path: String) throws {
        let code = posix_fallocate(fd, 0, off_t(length))
        guard code == 0 || code == EOPNOTSUPP || code == EINVAL else {
            throw FileIO.error(code, "cannot reserve \(length) bytes for '\(path)'")
        }
    }

    /// Syncs and closes the `.part`, verifies it, and moves it into place.
    private func finish(_ fd: Int32, total: Int64, record: DownloadRecord) throws {
        let synced = fsync(fd) == 0
        let code = errno
        Glibc.close(fd)
        guard synced else { throw FileIO.error(code, "cannot flush '\(partPath)'") }
        let size = FileIO.size(partPath) ?? 0
        guard size == total else { throw FetchError(.truncated, "the download has \(size) of \(total) bytes") }
        // The ranges came in any order: the whole file is hashed once, from disk.
        var digest: String?
        if let checksum {
            var hasher = ChecksumHasher(checksum.algorithm)
            try FileIO.read(partPath, length: size) { hasher.update($0) }
            digest = hasher.finalize()
        }
        try DownloadCompletion.place(part: partPath, at: destination, size: size, checksum: checksum, digest: digest,
                                     record: record, store: store, monitor: monitor, job: job)
        try? store?.deleteSegments(at: destination)
    }
}

/// The `HEAD` that decides whether a download is split: it keeps the response's head.
private final class ProbeSink: ResponseSink {
    func prepare(_ request: BuiltRequest, attempt: Int) async throws -> BuiltRequest {
        var request = request
        request.method = .head
        request.headers.update(name: "Accept-Encoding", value: "identity")
        return request
    }

    func open(_ head: TransportResponseHead) throws {}
    func write(_ chunk: ByteBuffer) throws {}

    /// The file's length, when the answer allows splitting it: a `200` with a length and
    /// `Accept-Ranges: bytes`.
    func splittableLength(_ head: TransportResponseHead) -> Int64? {
        guard head.status == 200, head.headers["Accept-Ranges"]?.lowercased().contains("bytes") == true,
              head.headers["Content-Encoding"].map({ $0.lowercased() == "identity" }) ?? true,
              let length = head.headers["Content-Length"].flatMap({ Int64($0) }), length > 0 else { return nil }
        return length
    }
}

/// One segment's request: asks for the rest of its range with `If-Range`, and writes what comes at
/// its offsets in the shared `.part`, recording its progress as it goes.
private final class SegmentSink: ResponseSink {
    private let total: Int64
    private let validator: String
    private let fd: Int32
    private let part: String
    private let destination: String
    private let store: StateStore?
    private let state: LockedBox<State>

    private struct State {
        var segment: DownloadSegment
        var recorded: Int64
        var received: Int64 = 0
        var wholeFile = false
    }

    init(segment: DownloadSegment, total: Int64, validator: String, fd: Int32, part: String, destination: String, store: StateStore?) {
        self.total = total
        self.validator = validator
        self.fd = fd
        self.part = part
        self.destination = destination
        self.store = store
        state = LockedBox(State(segment: segment, recorded: segment.done))
    }

    /// Whether the server answered with the whole file (`200`) instead of the range.
    var sawWholeFile: Bool { state.withLock { $0.wholeFile } }
    /// Bytes written by this sink, over all its attempts.
    var received: Int64 { state.withLock { $0.received } }

    func prepare(_ request: BuiltRequest, attempt: Int) async throws -> BuiltRequest {
        var request = request
        let segment = state.withLock { $0.segment }
        request.headers.update(name: "Range", value: "bytes=\(segment.next)-\(segment.end)")
        request.headers.update(name: "If-Range", value: validator)
        request.headers.update(name: "Accept-Encoding", value: "identity")
        return request
    }

    func open(_ head: TransportResponseHead) throws {
        let segment = state.withLock { $0.segment }
        guard head.status == 206 else {
            if head.status == 200 { state.withLock { $0.wholeFile = true } }
            // Not retried: asking again gets the same answer.
            throw FetchError(.status, "HTTP \(head.status) to the range request for bytes \(segment.next)-\(segment.end)", status: head.status)
        }
        let range = head.headers["Content-Range"].flatMap(DownloadSink.contentRange)
        guard let range, range.start == segment.next, range.total == nil || range.total == total else {
            throw FetchError(.truncated, "Content-Range '\(head.headers["Content-Range"] ?? "")' does not match bytes \(segment.next)-\(segment.end) of \(total)",
                             status: 206)
        }
    }

    func write(_ chunk: ByteBuffer) throws {
        let progress = try state.withLock { s -> Int64? in
            let room = s.segment.length - s.segment.done
            guard Int64(chunk.readableBytes) <= room else {
                throw FetchError(.truncated, "the server sent more than bytes \(s.segment.start)-\(s.segment.end)")
            }
            try chunk.withUnsafeReadableBytes { bytes in
                var written = 0
                while written < bytes.count {
                    let n = pwrite(fd, bytes.baseAddress! + written, bytes.count - written, off_t(s.segment.next) + off_t(written))
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw FileIO.error(errno, "cannot write to '\(part)'")
                    }
                    written += n
                }
            }
            s.segment.done += Int64(chunk.readableBytes)
            s.received += Int64(chunk.readableBytes)
            guard s.segment.done - s.recorded >= SegmentedDownload.progressStep else { return nil }
            s.recorded = s.segment.done
            return s.segment.done
        }
        if let progress { try? store?.saveSegmentProgress(at: destination, index: state.withLock { $0.segment.index }, done: progress) }
    }

    func finish() async throws { record() }
    func abandon() async { record() }

    /// Records how much of the segment is on disk (the bytes are written before this runs).
    private func record() {
        let (index, done, changed) = state.withLock { s -> (Int, Int64, Bool) in
            defer { s.recorded = s.segment.done }
            return (s.segment.index, s.segment.done, s.segment.done != s.recorded)
        }
        if changed { try? store?.saveSegmentProgress(at: destination, index: index, done: done) }
    }
}
