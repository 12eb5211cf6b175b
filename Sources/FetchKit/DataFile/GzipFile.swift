import CZlib
import Foundation

/// A file read through zlib's `gzread`, which reads gzip-compressed files and plain ones alike: a
/// data file may be `titles.csv` or `titles.csv.gz` with the same code path.
final class GzipFile {
    private var file: gzFile?
    let path: String
    let displayPath: String

    init(path: String, displayPath: String) throws(DataFileError) {
        self.path = path
        self.displayPath = displayPath
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw DataFileError(message: "cannot read the data file '\(displayPath)': \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw DataFileError(message: "the data file '\(displayPath)' is not a regular file")
        }
        guard let opened = gzopen(path, "rb") else {
            throw DataFileError(message: "cannot read the data file '\(displayPath)': \(String(cString: strerror(errno)))")
        }
        file = opened
        gzbuffer(opened, 256 * 1024)
    }

    deinit { close() }

    /// Reads up to `count` bytes into `buffer`; 0 at the end. Throws for a corrupt gzip stream or
    /// a read error.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(DataFileError) -> Int {
        guard let file else { return 0 }
        let got = gzread(file, buffer, UInt32(min(count, Int(Int32.max))))
        var code: Int32 = Z_OK
        let message = gzerror(file, &code).map { String(cString: $0) } ?? "read error"
        // A corrupt stream (< 0), or one cut short: zlib reads what it can, then says Z_BUF_ERROR at its end.
        if got < 0 || (got == 0 && code == Z_BUF_ERROR) {
            let reason = message.hasPrefix(path + ": ") ? String(message.dropFirst(path.count + 2)) : message
            throw DataFileError(message: "cannot read the data file '\(displayPath)': \(reason) (a gzip file cut short or corrupt?)")
        }
        return Int(got)
    }

    func close() {
        if let file { gzclose(file) }
        file = nil
    }
}

/// `GzipFile` as a Foundation `InputStream`, which is what CSV.swift reads from. CSV.swift asks
/// `hasBytesAvailable` before each byte it takes, so the answer must be exact at the end of the file:
/// the stream reads ahead into a buffer of its own to give it.
final class GzipInputStream: InputStream {
    private let source: GzipFile
    private var status: Stream.Status = .notOpen
    private var failure: Error?
    private var buffer = [UInt8](repeating: 0, count: 256 * 1024)
    private var start = 0
    private var end = 0

    init(_ source: GzipFile) {
        self.source = source
        super.init(data: Data())
    }

    override func open() { if status == .notOpen { status = .open } }

    override func close() {
        source.close()
        status = .closed
    }

    override var streamStatus: Stream.Status { status }
    override var streamError: Error? { failure }

    override var hasBytesAvailable: Bool {
        if start < end { return true }
        fill()
        return start < end
    }

    override func read(_ out: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        if start == end { fill() }
        if status == .error { return -1 }
        let count = min(length, end - start)
        if count > 0 {
            buffer.withUnsafeBytes { raw in
                UnsafeMutableRawPointer(out).copyMemory(from: raw.baseAddress! + start, byteCount: count)
            }
            start += count
        }
        return count
    }

    private func fill() {
        guard status == .open else { return }
        do {
            let got = try buffer.withUnsafeMutableBytes { raw in try source.read(into: raw.baseAddress!, count: raw.count) }
            start = 0
            end = got
            if got == 0 { status = .atEnd }
        } catch {
            failure = error
            status = .error
        }
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool { false }
}
