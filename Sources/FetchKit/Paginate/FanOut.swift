import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The records a fan-out (`for_each`) runs over, as its source job's responses give them: the
/// source appends each response's (each page's) `items` to `state_dir/fanout/<entry>.jsonl`, and
/// the fan-out's jobs are made from that file as the run takes them, like a data file's — so a
/// million records pass through a file, never through memory.
///
/// Appends come from the source's jobs (every expansion of a matrix entry) under one lock, a
/// response's records in one write. A paginated source records the spool's length with each
/// committed page, and a resumed crawl cuts the spool back to it.
final class FanOutSpool: @unchecked Sendable {
    let path: String
    let entry: String
    let items: JSONPath
    /// The source job ids: more than one for a matrix entry.
    let sources: [String]
    private let lock = NSLock()
    // Guarded by `lock`:
    private var fd: Int32 = -1
    private var written: Int64 = 0

    init(path: String, entry: String, items: JSONPath, sources: [String]) {
        self.path = path
        self.entry = entry
        self.items = items
        self.sources = sources
    }

    deinit { if fd >= 0 { close(fd) } }

    /// `state_dir/fanout/<entry>.jsonl`, the entry id made safe for a file name.
    static func path(stateDir: String, entry: String) -> String {
        let safe = String(entry.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-_.".unicodeScalars.contains(scalar)) ? Character(scalar) : "_"
        })
        return (stateDir as NSString).appendingPathComponent("fanout/\(safe).jsonl")
    }

    var length: Int64 { lock.withLock { written } }

    /// Opens the spool cut to `length` bytes: 0 for a source that starts over, the recorded length
    /// for a crawl that continues. Fails when it holds fewer.
    func open(keeping length: Int64) throws {
        try lock.withLock {
            if fd >= 0 { close(fd); fd = -1 }
            try FileIO.createDirectory(containing: path)
            fd = Glibc.open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw FileIO.error(errno, "cannot open '\(path)'") }
            var info = stat()
            guard fstat(fd, &info) == 0, Int64(info.st_size) >= length else {
                throw FetchError(.io, "'\(path)' holds fewer than the \(length) bytes its committed pages wrote")
            }
            guard ftruncate(fd, off_t(length)) == 0, lseek(fd, off_t(length), SEEK_SET) >= 0 else {
                throw FileIO.error(errno, "cannot cut '\(path)' back to \(length) bytes")
            }
            written = length
        }
    }

    /// Appends the records `items` names in one response's body. A record that is not an object
    /// (a string, a number) is written as `{"value": …}`: `{{<as>.value}}`.
    func append(from document: JSONValue) throws {
        let records = items.records(in: document)
        guard !records.isEmpty else { return }
        let bytes = JSONValue.jsonLines(records, wrapScalars: true)
        try lock.withLock {
            guard fd >= 0 else { throw FetchError(.io, "the fan-out spool '\(path)' is not open") }
            try FileIO.write(bytes, to: fd, path: path)
            written += Int64(bytes.count)
        }
    }

    /// Makes the appended records durable (before a page that wrote them is committed).
    func sync() throws {
        try lock.withLock {
            guard fd >= 0 else { return }
            guard fdatasync(fd) == 0 else { throw FileIO.error(errno, "cannot sync '\(path)'") }
        }
    }

    /// Closes the spool and removes it: its fan-out has read it (the end of the run).
    func remove() {
        lock.withLock {
            if fd >= 0 { close(fd); fd = -1 }
            unlink(path)
        }
    }
}
