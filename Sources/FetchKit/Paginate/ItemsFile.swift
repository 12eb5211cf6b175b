import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `save_items`: the records of every page as JSON Lines, appended to `<path>.part` page by page
/// and renamed into place once the last page is in, so the path holds every record or nothing.
///
/// A page's records are synced before the page is recorded as committed, and a resumed run cuts
/// the `.part` back to the committed length: a record written by a page that was not committed
/// (the run was killed in between) is written once, by the page's second fetch.
final class ItemsFile {
    let destination: String
    let partPath: String
    private var fd: Int32 = -1
    private(set) var length: Int64 = 0

    init(destination: String) {
        self.destination = destination
        partPath = destination + ".part"
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Opens the `.part` cut to `length` bytes (0: a new file). Fails when it holds fewer, since
    /// the committed pages' records are then not all there.
    func open(keeping length: Int64) throws {
        try FileIO.createDirectory(containing: partPath)
        fd = Glibc.open(partPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileIO.error(errno, "cannot open '\(partPath)'") }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileIO.error(errno, "cannot read '\(partPath)'") }
        guard Int64(info.st_size) >= length else {
            throw FetchError(.io, "'\(partPath)' holds \(info.st_size) bytes, fewer than the \(length) its committed pages wrote")
        }
        guard ftruncate(fd, off_t(length)) == 0, lseek(fd, off_t(length), SEEK_SET) >= 0 else {
            throw FileIO.error(errno, "cannot cut '\(partPath)' back to \(length) bytes")
        }
        self.length = length
    }

    /// Appends one line per record.
    func append(_ records: [JSONValue]) throws {
        guard !records.isEmpty else { return }
        let bytes = JSONValue.jsonLines(records)
        try FileIO.write(bytes, to: fd, path: partPath)
        length += Int64(bytes.count)
    }

    /// Makes what was appended durable, before the page is recorded as committed.
    func sync() throws {
        guard fdatasync(fd) == 0 else { throw FileIO.error(errno, "cannot sync '\(partPath)'") }
    }

    /// Moves the finished file into place.
    func finish() throws {
        try sync()
        close(fd)
        fd = -1
        guard rename(partPath, destination) == 0 else { throw FileIO.error(errno, "cannot move the file into place at '\(destination)'") }
        FileIO.syncDirectory(of: destination)
    }
}
