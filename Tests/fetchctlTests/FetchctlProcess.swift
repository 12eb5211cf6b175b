import Foundation

/// Runs the built `fetchctl` binary, as a user or CI would.
struct FetchctlProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The repository root (for examples and schemas).
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The binary beside the test bundle (SwiftPM builds it first: the test target depends on it).
    static let binary: URL = {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("fetchctl")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                return candidate
            }
            if directory.lastPathComponent.hasSuffix(".xctest") || directory.lastPathComponent == "Contents" {
                directory = directory.deletingLastPathComponent()
                continue
            }
            break
        }
        return root.appendingPathComponent(".build/debug/fetchctl")
    }()

    /// Runs `fetchctl arguments` in `directory` with exactly `environment` (plus PATH).
    static func run(_ arguments: [String], in directory: URL = root, environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes before waiting so a large output cannot block the child.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// A fresh temporary directory holding `files`.
    static func directory(with files: [String: String]) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fetchctl-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (name, text) in files { try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        return dir
    }
}
