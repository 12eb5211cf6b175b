import CFileSystem
import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Streams an accepted body to a temporary file beside `destination` and gives it the destination's
/// name only when the body is complete: a failed or interrupted job never leaves a file (partial or
/// otherwise) at its destination. Directories are created as needed.
///
/// The temporary file is unnamed where the file system has such files (`O_TMPFILE`: tmpfs, ext4,
/// XFS, Btrfs), and linked into place at the end: one change to the destination's directory a
/// file instead of two (a create and a rename), which the event loops saving into one directory
/// waited on each other for, and nothing left behind when the process is killed. Elsewhere it has
/// a hidden name, is renamed into place, and is removed on failure. Saves are atomic but not
/// fsynced (as curl); `durable` adds an fsync of the file and of its directory once it is in place.
public final class FileSink: ResponseSink, StagedFileSink {
    public let destination: String
    public let temporaryPath: String
    public let durable: Bool
    /// The destination's directory, where an unnamed temporary file is made.
    private let directory: String
    private let state = LockedBox(State())

    private struct State {
        var fd: Int32 = -1
        /// The response cache's file the body goes to instead of `temporaryPath` (`open(_:sharing:)`).
        var shared: SharedBodyFile?
        /// `fd` is an unnamed file in `directory` (`O_TMPFILE`), not `temporaryPath`.
        var unnamed = false
    }

    private static let processTag = "\(getpid())-"
    private static let counter = LockedBox(0)

    /// A sink for a `save` job: a hidden temporary file in the destination's directory.
    /// - Parameter durable: fsync the file and its directory around the rename (a paginated job's
    ///   page, recorded as committed right after).
    public static func save(to destination: String, durable: Bool = false) -> FileSink {
        // Split on the last "/" by bytes: a scan of Characters costs more than the rest of the save.
        let utf8 = destination.utf8
        let slash = utf8.lastIndex(of: UInt8(ascii: "/"))
        let nameStart = slash.map { utf8.index(after: $0) } ?? utf8.startIndex
        // Unique per process (pid) and per sink (a counter), with no system call for randomness.
        let serial = Self.counter.withLock { $0 += 1; return $0 }
        // `<dir>/.<name>.fetchctl-<pid>-<serial>.tmp`, appended into one buffer.
        var temporary = ""
        temporary.reserveCapacity(utf8.count + 40)
        // `append(contentsOf:)` with a Substring is String's own overload; `+=` took the generic
        // Sequence one, whose first call resolved its witnesses at run time (about 220,000
        // instructions a process, a walk of every conformance record).
        temporary.append(contentsOf: Substring(utf8[..<nameStart]))
        temporary += "."
        temporary.append(contentsOf: Substring(utf8[nameStart...]))
        temporary += ".fetchctl-"
        temporary += Self.processTag
        temporary += String(serial)
        temporary += ".tmp"
        return FileSink(destination: destination, temporaryPath: temporary, durable: durable)
    }

    public init(destination: String, temporaryPath: String, durable: Bool) {
        self.destination = destination
        self.temporaryPath = temporaryPath
        self.durable = durable
        let utf8 = destination.utf8
        switch utf8.lastIndex(of: UInt8(ascii: "/")) {
        case nil: directory = "."
        case utf8.startIndex?: directory = "/"
        case let slash?: directory = String(Substring(utf8[..<slash]))
        }
    }

    public func open(_ head: TransportResponseHead) throws {
        try state.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = -1
            s.shared = nil
            s.unnamed = false
            // The directory usually exists: try first, create it only when the open says it's missing.
            var fd = fk_open_unnamed(directory, 0o644)
            if fd < 0, errno == ENOENT {
                try FileIO.createDirectory(containing: destination)
                fd = fk_open_unnamed(directory, 0o644)
            }
            if fd >= 0 {
                s.fd = fd
                s.unnamed = true
                return
            }
            // No unnamed files here (EOPNOTSUPP, EISDIR): a hidden name.
            fd = Glibc.open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            if fd < 0, errno == ENOENT {
                try FileIO.createDirectory(containing: temporaryPath)
                fd = Glibc.open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            }
            guard fd >= 0 else { throw FileIO.error(errno, "cannot create '\(temporaryPath)'") }
            s.fd = fd
        }
    }

    func open(_ head: TransportResponseHead, sharing file: SharedBodyFile) throws -> Int32 {
        try state.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.shared = nil
            s.unnamed = false
            s.fd = FileIO.openat(file.directory, file.name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard s.fd >= 0 else { throw FileIO.error(errno, "cannot create '\(file.path)'") }
            s.shared = file
            return s.fd
        }
    }

    var stagedFile: (path: String, descriptor: Int32)? { state.withLock { $0.fd >= 0 ? ($0.shared?.path ?? temporaryPath, $0.fd) : nil } }

    /// A hit linked into place needs neither `open` nor `finish`; a durable save syncs what it wrote itself.
    var linkTarget: (destination: String, staging: String)? { durable ? nil : (destination, temporaryPath) }

    public func write(_ chunk: ByteBuffer) throws {
        try state.withLock { s in
            guard s.fd >= 0 else { throw FetchError(.io, "'\(temporaryPath)' is not open") }
            try FileIO.write(chunk, to: s.fd, path: temporaryPath)
        }
    }

    public func finish() async throws {
        try state.withLock { s in
            guard s.fd >= 0 else { throw FetchError(.io, "'\(temporaryPath)' is not open") }
            defer { s.fd = -1 }
            if durable, fsync(s.fd) != 0 {
                let code = errno
                Glibc.close(s.fd)
                throw FileIO.error(code, "cannot flush '\(temporaryPath)'")
            }
            if s.unnamed {
                defer { Glibc.close(s.fd) }
                try placeUnnamed(s.fd)
                if durable { FileIO.syncDirectory(of: destination) }
                return
            }
            guard Glibc.close(s.fd) == 0 else { throw FileIO.error(errno, "cannot close '\(temporaryPath)'") }
            if let shared = s.shared {
                try place(shared)
                return
            }
            guard rename(temporaryPath, destination) == 0 else { throw FileIO.error(errno, "cannot move the file into place at '\(destination)'") }
            if durable { FileIO.syncDirectory(of: destination) }
        }
    }

    /// Puts the response cache's complete file `shared` at the destination: a hard link (one
    /// system call when nothing is there; a link under the temporary name and a rename over the
    /// destination when something is, so it is never missing); a copy, renamed into place, where
    /// no link can be made (the cache on another file system).
    private func place(_ shared: SharedBodyFile) throws {
        if FileIO.linkat(shared.directory, shared.name, AT_FDCWD, destination) == 0 { return }
        if errno == ENOENT {
            try FileIO.createDirectory(containing: destination)
            if FileIO.linkat(shared.directory, shared.name, AT_FDCWD, destination) == 0 { return }
        }
        if errno != EEXIST || FileIO.linkat(shared.directory, shared.name, AT_FDCWD, temporaryPath) != 0 {
            // EXDEV, EMLINK, EPERM: the bytes are copied (in the kernel) instead.
            let input = FileIO.openat(shared.directory, shared.name, O_RDONLY | O_CLOEXEC, 0)
            guard input >= 0 else { throw FileIO.error(errno, "cannot read '\(shared.path)'") }
            defer { Glibc.close(input) }
            try copyToTemporary(from: input)
        }
        try renameIntoPlace()
    }

    /// Names the complete unnamed file `fd` `destination`: a link when nothing is there; a link
    /// under the temporary name and a rename over the destination when something is (a rerun), so
    /// it is never missing; a copy under the temporary name, renamed into place, where the file
    /// can't be linked (an older kernel refusing AT_EMPTY_PATH, and no /proc).
    private func placeUnnamed(_ fd: Int32) throws {
        if fk_link_unnamed(fd, destination) == 0 { return }
        if errno != EEXIST || fk_link_unnamed(fd, temporaryPath) != 0 {
            guard lseek(fd, 0, SEEK_SET) == 0 else { throw FileIO.error(errno, "cannot read '\(temporaryPath)'") }
            try copyToTemporary(from: fd)
        }
        try renameIntoPlace()
    }

    /// Copies `input`, from its offset to its end, into a new file at `temporaryPath` (in the kernel
    /// where it can); nothing is left there if the copy fails.
    private func copyToTemporary(from input: Int32) throws {
        let output = Glibc.open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw FileIO.error(errno, "cannot create '\(temporaryPath)'") }
        do {
            _ = try FileIO.copy(from: input, to: output, path: temporaryPath)
        } catch {
            Glibc.close(output)
            unlink(temporaryPath)
            throw error
        }
        guard Glibc.close(output) == 0 else {
            let code = errno
            unlink(temporaryPath)
            throw FileIO.error(code, "cannot close '\(temporaryPath)'")
        }
    }

    /// Renames `temporaryPath` over the destination; removes it if that fails.
    private func renameIntoPlace() throws {
        guard rename(temporaryPath, destination) == 0 else {
            let code = errno
            unlink(temporaryPath)
            throw FileIO.error(code, "cannot move the file into place at '\(destination)'")
        }
    }

    public func abandon() async {
        state.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = -1
            if let shared = s.shared {
                unlinkat(shared.directory, shared.name, 0)
            } else if !s.unnamed {
                unlink(temporaryPath)
            }
            s.shared = nil
            s.unnamed = false
        }
    }
}
