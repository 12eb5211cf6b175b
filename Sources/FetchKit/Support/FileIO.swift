import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// The few POSIX file operations output files need, with errors as `FetchError`s (`disk_full` for
/// ENOSPC/EDQUOT, `io` otherwise).
enum FileIO {
    static func error(_ code: Int32, _ message: String) -> FetchError {
        let reason = String(cString: strerror(code))
        return FetchError(code == ENOSPC || code == EDQUOT ? .diskFull : .io, "\(message): \(reason)")
    }

    static func createDirectory(containing path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        guard !directory.isEmpty else { return }  // a bare file name: the current directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw FetchError(.io, "cannot create the directory '\(directory)': \(error.localizedDescription)")
        }
    }

    /// Writes all of `bytes` to `fd`.
    static func write(_ bytes: [UInt8], to fd: Int32, path: String) throws {
        try bytes.withUnsafeBytes { try write($0, to: fd, path: path) }
    }

    /// Writes all of `chunk` to `fd`.
    static func write(_ chunk: ByteBuffer, to fd: Int32, path: String) throws {
        try chunk.withUnsafeReadableBytes { try write($0, to: fd, path: path) }
    }

    /// Writes all of `buffer` to `fd`, again after a short write or an interrupted call.
    static func write(_ buffer: UnsafeRawBufferPointer, to fd: Int32, path: String) throws {
        var offset = 0
        while offset < buffer.count {
            let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw error(errno, "cannot write '\(path)'")
            }
            offset += written
        }
    }

    /// Copies what is left of `input` (up to `length` bytes) to `output` with `sendfile`, in the
    /// kernel, falling back to read and write where the kernel can't (EINVAL or ENOSYS on some file
    /// systems). Returns the bytes copied: fewer than `length` when `input` ended first.
    @discardableResult
    static func copy(from input: Int32, to output: Int32, length: Int64? = nil, path: String) throws -> Int64 {
        var copied: Int64 = 0
        var inKernel = true
        var buffer: [UInt8] = []
        while true {
            let wanted = Int(min(length.map { $0 - copied } ?? (1 << 30), 1 << 30))
            if wanted == 0 { return copied }
            if inKernel {
                let count = sendfile(output, input, nil, wanted)
                if count > 0 { copied += Int64(count); continue }
                if count == 0 { return copied }
                if errno == EINTR { continue }
                guard errno == EINVAL || errno == ENOSYS else { throw error(errno, "cannot write '\(path)'") }
                inKernel = false
                buffer = [UInt8](repeating: 0, count: 1 << 16)
            }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress!, min($0.count, wanted)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw error(errno, "cannot read the file copied to '\(path)'")
            }
            if count == 0 { return copied }
            try buffer.withUnsafeBytes { raw in
                var offset = 0
                while offset < count {
                    let written = Glibc.write(output, raw.baseAddress! + offset, count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw error(errno, "cannot write '\(path)'")
                    }
                    offset += written
                }
            }
            copied += Int64(count)
        }
    }

    /// `openat(2)` with a name given as a Swift string, passed through `withCString`, which hands
    /// over a native string's own bytes (a small one's from the stack): the implicit conversion of
    /// a string argument to a C string copies it into a new array (`utf8CString`), a `malloc` and a
    /// `free` a call, three a stored response.
    static func openat(_ directory: Int32, _ name: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
        name.withCString { Glibc.openat(directory, $0, flags, mode) }
    }

    /// `linkat(2)` with both names as Swift strings, through `withCString` (see `openat`).
    static func linkat(_ fromDirectory: Int32, _ from: String, _ toDirectory: Int32, _ to: String, _ flags: Int32 = 0) -> Int32 {
        from.withCString { source in to.withCString { Glibc.linkat(fromDirectory, source, toDirectory, $0, flags) } }
    }

    /// The size of the file at `path`, nil when there is none.
    static func size(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG || (info.st_mode & S_IFMT) == S_IFCHR else { return nil }
        return Int64(info.st_size)
    }

    static func syncDirectory(of path: String) {
        let fd = Glibc.open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        Glibc.close(fd)
    }

    /// Calls `body` with the file's bytes in 1 MiB pieces, up to `length`.
    static func read(_ path: String, length: Int64, _ body: (UnsafeRawBufferPointer) -> Void) throws {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw error(errno, "cannot read '\(path)'") }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var remaining = length
        while remaining > 0 {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, Int(min(Int64($0.count), remaining))) }
            if count < 0 {
                if errno == EINTR { continue }
                throw error(errno, "cannot read '\(path)'")
            }
            if count == 0 { break }
            buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            remaining -= Int64(count)
        }
    }
}
