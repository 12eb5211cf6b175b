import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A JSON Lines file that grows by appends and can be cut back to a committed length: the base of
/// `save_items` (`ItemsFile`) and of a fan-out's records (`FanOutSpool`). Not thread-safe.
///
/// Appends are synced before the page that made them is recorded as committed, and a resumed run
/// cuts the file back to the committed length: a record written by a page that was not committed
/// (the run was killed in between) is written once, by the page's second fetch.
final class JSONLinesFile {
    let path: String
    private let mode: mode_t
    private var fd: Int32 = -1
    private(set) var length: Int64 = 0

    init(path: String, mode: mode_t = 0o644) {
        self.path = path
        self.mode = mode
    }

    deinit { close() }

    var isOpen: Bool { fd >= 0 }

    /// Opens the file cut to `length` bytes (0: empty). Fails when it holds fewer, since the
    /// committed pages' records are then not all there.
    func open(keeping length: Int64) throws {
        close()
        try FileIO.createDirectory(containing: path)
        fd = Glibc.open(path, O_WRONLY | O_CREAT | O_CLOEXEC, mode)
        guard fd >= 0 else { throw FileIO.error(errno, "cannot open '\(path)'") }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileIO.error(errno, "cannot read '\(path)'") }
        guard Int64(info.st_size) >= length else {
            throw FetchError(.io, "'\(path)' holds \(info.st_size) bytes, fewer than the \(length) its committed pages wrote")
        }
        guard ftruncate(fd, off_t(length)) == 0, lseek(fd, off_t(length), SEEK_SET) >= 0 else {
            throw FileIO.error(errno, "cannot cut '\(path)' back to \(length) bytes")
        }
        self.length = length
    }

    /// Appends lines (`JSONValue.jsonLines`) in one write.
    func append(_ bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { return }
        guard fd >= 0 else { throw FetchError(.io, "'\(path)' is not open") }
        try FileIO.write(bytes, to: fd, path: path)
        length += Int64(bytes.count)
    }

    /// Makes what was appended durable.
    func sync() throws {
        guard fd >= 0 else { return }
        guard fdatasync(fd) == 0 else { throw FileIO.error(errno, "cannot sync '\(path)'") }
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }
}

/// `save_items`: the records of every page as JSON Lines, appended to `<path>.part` page by page
/// and renamed into place once the last page is in, so the path holds every record or nothing.
final class ItemsFile {
    let destination: String
    private let part: JSONLinesFile

    init(destination: String) {
        self.destination = destination
        part = JSONLinesFile(path: destination + ".part")
    }

    var length: Int64 { part.length }

    func open(keeping length: Int64) throws { try part.open(keeping: length) }

    /// Appends one line per record.
    func append(_ records: [JSONValue]) throws { try part.append(JSONValue.jsonLines(records)) }

    /// Makes what was appended durable, before the page is recorded as committed.
    func sync() throws { try part.sync() }

    /// Moves the finished file into place.
    func finish() throws {
        try part.sync()
        part.close()
        guard rename(part.path, destination) == 0 else { throw FileIO.error(errno, "cannot move the file into place at '\(destination)'") }
        FileIO.syncDirectory(of: destination)
    }
}
