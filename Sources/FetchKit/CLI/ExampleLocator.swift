import Foundation

/// Finds a file shipped with the repository (such as `examples/quickstart/jobs.yaml`): relative to
/// the working directory first, then to each directory above the running binary (a `swift build`
/// binary lives in `.build/<config>/` inside the checkout).
public enum ExampleLocator {
    public static func find(_ relativePath: String, executable: String = CommandLine.arguments[0]) -> String? {
        let manager = FileManager.default
        if manager.fileExists(atPath: relativePath) { return relativePath }
        var directory = URL(fileURLWithPath: executable).resolvingSymlinksInPath().deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent(relativePath).path
            if manager.fileExists(atPath: candidate) { return candidate }
            directory.deleteLastPathComponent()
        }
        return nil
    }
}
