import Foundation
import NIOConcurrencyHelpers

/// Fresh directories under the system's temporary directory for tests, removed when the process
/// exits (an `atexit` handler), so a test run leaves nothing behind in `/tmp` even when a test fails
/// before its own cleanup.
public enum TemporaryDirectory {
    private static let created = NIOLockedValueBox<[String]>([])
    private static let registerCleanup: Void = {
        atexit {
            for path in TemporaryDirectory.created.withLockedValue({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
    }()

    /// Creates `<tmp>/<prefix>-<uuid>` and returns its path.
    public static func make(prefix: String) throws -> String {
        _ = registerCleanup
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        created.withLockedValue { $0.append(path) }
        return path
    }
}
