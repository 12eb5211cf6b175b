import Foundation
import FetchKitTesting
@testable import FetchKit

/// Config files written to a fresh temporary directory, loaded with the real loader, and diagnostics
/// rendered with paths relative to that directory, so tests can assert exact text. The directory is
/// removed when the test process exits.
struct ConfigFixture {
    let directory: String

    init(_ files: [String: String]) throws {
        directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        for (name, text) in files {
            let path = (directory as NSString).appendingPathComponent(name)
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        }
    }

    func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    func load(_ names: String..., environment: [String: String] = [:], mode: InterpolationMode = .validate) -> LoadedConfig {
        ConfigLoader(environment: environment, mode: mode).load(names.map(path))
    }

    /// Text diagnostics of loading `names`, with this fixture's directory stripped from paths.
    func diagnostics(_ names: String..., environment: [String: String] = [:], mode: InterpolationMode = .validate,
                     format: DiagnosticRenderer.Format = .text) -> String {
        let config = ConfigLoader(environment: environment, mode: mode).load(names.map(path))
        return DiagnosticRenderer(sources: config.sources).render(config.diagnostics, format: format)
            .replacingOccurrences(of: directory + "/", with: "")
    }
}
