import ArgumentParser
import FetchKit
import FetchKitTesting
import Foundation

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run examples/quickstart against a built-in HTTP server on 127.0.0.1 (no network needed).",
        discussion: """
        Starts fetchctl's test server on a free port of 127.0.0.1, sets QUICKSTART_URL to it and runs
        examples/quickstart/jobs.yaml: a flaky endpoint recovering through retries, a 429 with
        Retry-After, concurrent saves, a streamed download that is cut off once and resumed, and the
        response cache (a fresh answer served without a request, a 304 revalidation), with live
        progress and a summary. Each demo starts fresh: its state (download records, the response
        cache) lives in a temporary directory removed afterwards.
        Results land in examples/quickstart/out/.

        Examples:
          swift run fetchctl demo
          fetchctl demo --log-format json
        """
    )

    @Option(help: ArgumentHelp("The jobs file to run (default: examples/quickstart/jobs.yaml, found from here or beside the binary).",
                               valueName: "path"))
    var example: String?

    @Option(help: "Log format: text (for people) or json (one object a line).")
    var logFormat: RunInvocation.LogFormat = .text

    @Option(help: "Live progress on stderr: auto (when it is a terminal), always, never.")
    var progress: RunInvocation.ProgressMode = .auto

    func run() async throws {
        guard let jobsFile = example ?? ExampleLocator.find("examples/quickstart/jobs.yaml") else {
            throw ValidationError("cannot find examples/quickstart/jobs.yaml; run from the repository root or pass --example PATH")
        }
        let server = try await TestServer.start()
        let stderr = LogWriter.standardError
        stderr.write("fetchctl demo: test server on \(server.baseURL); running \(jobsFile)\n")
        // A state directory of its own, removed afterwards: every demo starts fresh (no recorded
        // download makes the archive up to date, no stored response turns the misses into hits).
        let state = try TemporaryDirectory.make(prefix: "fetchctl-demo")
        var invocation = RunInvocation(jobsFile: jobsFile)
        invocation.stateDir = state
        invocation.environment["QUICKSTART_URL"] = server.baseURL
        invocation.logFormat = logFormat
        invocation.progress = progress
        let status = await invocation.perform(stdout: .standardOutput, stderr: stderr)
        try? await server.shutdown()
        try? FileManager.default.removeItem(atPath: state)
        if status == .success {
            stderr.write("Results: \(URL(fileURLWithPath: jobsFile).deletingLastPathComponent().appendingPathComponent("out").path)/\n")
            stderr.flush()
        } else {
            throw ExitCode(status.rawValue)
        }
    }
}
