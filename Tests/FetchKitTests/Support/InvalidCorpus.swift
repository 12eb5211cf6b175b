import Foundation

/// The files under `Tests/Fixtures/invalid`, found from this source file's location.
enum InvalidCorpus {
    static let directory: String = {
        let here = URL(fileURLWithPath: #filePath)
        return here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/invalid").path
    }()

    static let files: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted().map { (directory as NSString).appendingPathComponent($0) }
    }()
}
