import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The last steps of every download, over one connection (`DownloadSink`) or several
/// (`SegmentedDownload`), once the `.part` is synced and holds `size` bytes: the checksum is
/// compared (a mismatch deletes the `.part` and its record: the bytes are wrong, not missing), the
/// file is renamed into place and its directory synced, the record marked completed (with the
/// verified digest), and `download.verified` sent.
enum DownloadCompletion {
    static func place(part: String, at destination: String, size: Int64, checksum: Checksum?, digest: String?,
                      record: DownloadRecord, store: StateStore?, monitor: (any EventMonitor)?, job: String?) throws {
        if let checksum, let digest, digest != checksum.hex {
            unlink(part)
            try? store?.deleteDownload(at: destination)
            throw FetchError(.checksum, "\(checksum.algorithm.rawValue) mismatch: expected \(checksum.hex), got \(digest); the partial file was deleted")
        }
        guard rename(part, destination) == 0 else { throw FileIO.error(errno, "cannot move the download into place at '\(destination)'") }
        FileIO.syncDirectory(of: destination)
        var record = record
        record.totalLength = size
        record.completed = true
        record.checksum = checksum.map { "\($0.algorithm.rawValue):\(digest ?? "")" }
        try? store?.saveDownload(record)
        if let checksum, let digest {
            monitor?.downloadDidVerify(job: job, algorithm: checksum.algorithm.rawValue, digest: digest, bytes: size)
        }
    }
}
