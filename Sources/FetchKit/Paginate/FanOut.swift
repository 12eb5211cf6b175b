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
    /// Guarded by `lock`.
    private let file: JSONLinesFile

    init(path: String, entry: String, items: JSONPath, sources: [String]) {
        self.path = path
        self.entry = entry
        self.items = items
        self.sources = sources
        file = JSONLinesFile(path: path, mode: 0o600)
    }

    /// `state_dir/fanout/<entry>.jsonl`, the entry id made safe for a file name.
    static func path(stateDir: String, entry: String) -> String {
        let safe = String(entry.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-_.".unicodeScalars.contains(scalar)) ? Character(scalar) : "_"
        })
        return (stateDir as NSString).appendingPathComponent("fanout/\(safe).jsonl")
    }

    var length: Int64 { lock.withLock { file.length } }

    /// Opens the spool cut to `length` bytes: 0 for a source that starts over, the recorded length
    /// for a crawl that continues. Fails when it holds fewer.
    func open(keeping length: Int64) throws {
        try lock.withLock { try file.open(keeping: length) }
    }

    /// Appends the records `items` names in one response's body. A record that is not an object
    /// (a string, a number) is written as `{"value": …}`: `{{<as>.value}}`.
    func append(from document: JSONValue) throws {
        let records = items.records(in: document)
        guard !records.isEmpty else { return }
        let bytes = JSONValue.jsonLines(records, wrapScalars: true)
        try lock.withLock { try file.append(bytes) }
    }

    /// Makes the appended records durable (before a page that wrote them is committed).
    func sync() throws {
        try lock.withLock { try file.sync() }
    }

    /// Closes the spool and removes it: its fan-out has read it (the end of the run).
    func remove() {
        lock.withLock {
            file.close()
            unlink(path)
        }
    }
}
