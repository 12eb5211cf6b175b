import FetchKit
import Foundation

/// Where commands write: results to stdout, diagnostics and messages to stderr.
enum Output {
    static func stdout(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func stderr(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Prints a config's diagnostics to stderr as text (for commands other than `validate`).
    static func diagnostics(of config: LoadedConfig) {
        let renderer = DiagnosticRenderer(sources: config.sources)
        stderr(renderer.render(config.diagnostics, format: .text))
    }
}
