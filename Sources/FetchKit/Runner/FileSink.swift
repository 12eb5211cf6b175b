import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Streams an accepted body to a temporary file beside `destination` and renames it into place
/// only when the body is complete: a failed or interrupted job never leaves a file (partial or
/// otherwise) at its destination. Directories are created as needed.
///
/// `save` uses a hidden temporary name that is removed on failure. `download` writes
/// `<destination>.part`, and with `durable` the file and its directory are fsynced around the rename.
public final class FileSink: ResponseSink {
    public let destination: String
    public let temporaryPath: String
    public let durable: Bool
    private let state = LockedBox(State())

    private struct State {
        var fd: Int32 = -1
        var bytes: Int64 = 0
    }

    /// A sink for a `save` job: a hidden temporary file in the destination's directory.
    public static func save(to destination: String) -> FileSink {
        let url = URL(fileURLWithPath: destination)
        let name = ".\(url.lastPathComponent).fetchctl-\(UInt32.random(in: 0...UInt32.max)).tmp"
        return FileSink(destination: destination, temporaryPath: url.deletingLastPathComponent().appendingPathComponent(name).path, durable: false)
    }

    /// A sink for a `download` job: `<destination>.part`, fsynced before it is renamed into place.
    public static func download(to destination: String) -> FileSink {
        FileSink(destination: destination, temporaryPath: destination + ".part", durable: true)
    }

    public init(destination: String, temporaryPath: String, durable: Bool) {
        self.destination = destination
        self.temporaryPath = temporaryPath
        self.durable = durable
    }

    public var bytesWritten: Int64 { state.withLock { $0.bytes } }

    public func open(_ head: TransportResponseHead) async throws {
        try state.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = -1
            s.bytes = 0
            let directory = (temporaryPath as NSString).deletingLastPathComponent
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw FetchError(.io, "cannot create the directory '\(directory)': \(Self.reason(error))")
            }
            let fd = Glibc.open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw Self.error(errno, "cannot create '\(temporaryPath)'") }
            s.fd = fd
        }
    }

    public func write(_ chunk: ByteBuffer) async throws {
        try state.withLock { s in
            guard s.fd >= 0 else { throw FetchError(.io, "'\(temporaryPath)' is not open") }
            try chunk.withUnsafeReadableBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(s.fd, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw Self.error(errno, "cannot write '\(temporaryPath)'")
                    }
                    offset += written
                }
            }
            s.bytes += Int64(chunk.readableBytes)
        }
    }

    public func finish() async throws {
        try state.withLock { s in
            guard s.fd >= 0 else { throw FetchError(.io, "'\(temporaryPath)' is not open") }
            defer { s.fd = -1 }
            if durable, fsync(s.fd) != 0 {
                let code = errno
                Glibc.close(s.fd)
                throw Self.error(code, "cannot flush '\(temporaryPath)'")
            }
            guard Glibc.close(s.fd) == 0 else { throw Self.error(errno, "cannot close '\(temporaryPath)'") }
            guard rename(temporaryPath, destination) == 0 else { throw Self.error(errno, "cannot move the file into place at '\(destination)'") }
            if durable { Self.syncDirectory(of: destination) }
        }
    }

    public func abandon() async {
        state.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = -1
            unlink(temporaryPath)
        }
    }

    static func syncDirectory(of path: String) {
        let fd = Glibc.open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        Glibc.close(fd)
    }

    /// `disk_full` for ENOSPC/EDQUOT, `io` otherwise, with the system's reason.
    static func error(_ code: Int32, _ message: String) -> FetchError {
        let reason = String(cString: strerror(code))
        return FetchError(code == ENOSPC || code == EDQUOT ? .diskFull : .io, "\(message): \(reason)")
    }

    static func reason(_ error: Error) -> String {
        (error as NSError).localizedFailureReason ?? error.localizedDescription
    }
}
