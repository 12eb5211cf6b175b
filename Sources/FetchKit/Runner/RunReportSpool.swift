import Foundation

/// Gathers each finished data-file job's report entry as it comes, in a hidden temporary file beside
/// each report (`.<name>.jobs-<pid>`), so the run keeps no such result in memory for its reports; at
/// the end `RunReport.write(_:jobsFile:exitCode:spool:)` writes the report's header (which needs the
/// final counts), the written-out jobs in plan order (the summary keeps those), then the spooled
/// entries in the order they finished, and the footer. The spool files are removed when the report is
/// written, or when the spool goes away.
public final class RunReportSpool: EventMonitor, @unchecked Sendable {
    /// One report's spool.
    public final class Report: @unchecked Sendable {
        public let format: RunReport.Format
        public let path: String
        let spoolPath: String
        private let handle: FileHandle
        private var buffer = Data()
        private var count = 0

        init(format: RunReport.Format, path: String) throws {
            self.format = format
            self.path = path
            try FileIO.createDirectory(containing: path)
            let directory = (path as NSString).deletingLastPathComponent
            let name = ".\((path as NSString).lastPathComponent).jobs-\(getpid())"
            spoolPath = directory.isEmpty ? name : (directory as NSString).appendingPathComponent(name)
            guard FileManager.default.createFile(atPath: spoolPath, contents: nil) else {
                throw FetchError(.io, "cannot write the report '\(path)': cannot create '\(spoolPath)'")
            }
            handle = try FileHandle(forUpdating: URL(fileURLWithPath: spoolPath))
        }

        deinit {
            try? handle.close()
            unlink(spoolPath)
        }

        /// Under the spool's lock. Each JSON entry is preceded by a comma: the written-out jobs come first.
        func append(_ entry: String) {
            if format == .json { buffer.append(UInt8(ascii: ",")) }
            buffer.append(contentsOf: entry.utf8)
            count += 1
            if buffer.count >= 1 << 16 { flush() }
        }

        func flush() {
            guard !buffer.isEmpty else { return }
            try? handle.write(contentsOf: buffer)
            buffer.removeAll(keepingCapacity: true)
        }

        /// Every entry, in chunks, to `sink`.
        func copy(to sink: (String) throws -> Void) throws {
            flush()
            try handle.seek(toOffset: 0)
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                try sink(String(decoding: chunk, as: UTF8.self))
            }
        }
    }

    public let reports: [Report]
    /// The written-out jobs: the summary keeps their results, in plan order.
    private let keptJobs: Set<String>
    private let jobsFile: String
    private let redactor: Redactor
    private let lock = NSLock()

    /// - Parameter keptJobs: the ids of the written-out jobs (the summary's `results`), not spooled.
    public init(reports: [(format: RunReport.Format, path: String)], jobsFile: String, redactor: Redactor, keptJobs: Set<String>) throws {
        self.reports = try reports.map { try Report(format: $0.format, path: $0.path) }
        self.keptJobs = keptJobs
        self.jobsFile = jobsFile
        self.redactor = redactor
    }

    public func jobDidFinish(_ result: JobResult) {
        if keptJobs.contains(result.job) { return }
        let entries = reports.map { RunReport.entry(result, format: $0.format, jobsFile: jobsFile, redactor: redactor) }
        lock.lock()
        defer { lock.unlock() }
        for (report, entry) in zip(reports, entries) { report.append(entry) }
    }

    /// Writes every report, each atomically; the first failure is rethrown after trying them all.
    public func write(_ summary: RunSummary, exitCode: Int32) -> [Error] {
        lock.lock()
        defer { lock.unlock() }
        var failures: [Error] = []
        for report in reports {
            do { try RunReport.write(summary, jobsFile: jobsFile, exitCode: exitCode, spool: report, redactor: redactor) } catch { failures.append(error) }
        }
        return failures
    }
}
