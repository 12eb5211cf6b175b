import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The advisory lock on `state_dir/lock` that keeps two runs off one state directory (SPEC §5): a
/// `flock` the kernel releases when the process dies, however it dies. The holder writes its pid into
/// the file so the refused run can name it.
public final class RunLock: Sendable {
    public let path: String
    private let fd: Int32

    /// Another run holds the lock.
    public struct Held: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var pid: Int32?
        public var description: String {
            "another fetchctl run\(pid.map { " (pid \($0))" } ?? "") holds \(path); try again when it has finished"
        }
    }

    /// Takes the lock at once or throws `Held` (or a `FetchError` when the file can't be opened).
    public init(directory: String) throws {
        path = (directory as NSString).appendingPathComponent("lock")
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw FetchError(.io, "cannot create the state directory '\(directory)': \(error.localizedDescription)")
        }
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FetchError(.io, "cannot open '\(path)': \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.readPID(fd)
            close(fd)
            throw Held(path: path, pid: holder)
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
        self.fd = fd
    }

    deinit {
        _ = ftruncate(fd, 0)
        close(fd)  // Closing the descriptor releases the flock.
    }

    private static func readPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
