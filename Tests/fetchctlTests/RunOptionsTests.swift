import ArgumentParser
import Testing
@testable import FetchctlCommands

/// `RunOptions(quicklyParsing:)` reads the common `fetchctl run` command lines without
/// ArgumentParser; what it reads must be what ArgumentParser reads, and whatever it does not read
/// (an unknown or repeated option, a bad value, `--report`) must be left to ArgumentParser, so
/// that every mistake is still reported by ArgumentParser.
@Suite struct RunOptionsTests {
    /// Command lines (after `fetchctl run`) the quick reader reads.
    static let read: [[String]] = [
        ["jobs.yaml"],
        ["jobs.yaml", "--progress", "never"],
        ["jobs.yaml", "--progress=always", "--log-format", "json", "--log-file", "run.log"],
        ["jobs.yaml", "--concurrency", "4", "--job", "a", "--job", "b[x=1]"],
        ["jobs.yaml", "--concurrency=+3", "--job=a"],
        ["jobs.yaml", "--no-resume", "--offline", "--fail-fast"],
        ["jobs.yaml", "--reset-incremental", "feed", "--reset-incremental", "news", "--max-time", "10m",
         "--metrics-file", "m.prom", "--metrics-push", "http://127.0.0.1:9091"],
        ["jobs dir/the jobs.yaml", "--log-file", "a=b.log"],
        ["jobs.yaml", "--dry-run"],
        ["jobs.yaml", "--state-dir", "state", "--shard", "1/2"],
        ["jobs.yaml", "--shard=index-env=JOB_COMPLETION_INDEX/8", "--state-dir=/var/lib/fetchctl", "--progress", "never"],
    ]

    /// Command lines it leaves to ArgumentParser, valid or not.
    static let leftToArgumentParser: [[String]] = [
        ["jobs.yaml", "--report", "json", "r.json"],
        ["jobs.yaml", "--dry-run", "--dry-run"],
        ["jobs.yaml", "--state-dir", "a", "--state-dir", "b"],
        ["jobs.yaml", "--shard"],
        ["jobs.yaml", "--concurrency", "0"],
        ["jobs.yaml", "--concurrency", "-1"],
        ["jobs.yaml", "--concurrency", "four"],
        ["jobs.yaml", "--concurrency", "2", "--concurrency", "3"],
        ["jobs.yaml", "--offline", "--offline"],
        ["jobs.yaml", "--offline=true"],
        ["jobs.yaml", "--log-format", "xml"],
        ["jobs.yaml", "--progress", ""],
        ["jobs.yaml", "--log-file"],
        ["jobs.yaml", "--log-file", "-"],
        ["jobs.yaml", "--log-file", "--offline"],
        ["jobs.yaml", "--max-time", "soon"],
        ["jobs.yaml", "--metrics-push", "ftp://127.0.0.1"],
        ["jobs.yaml", "--bogus"],
        ["jobs.yaml", "-x"],
        ["jobs.yaml", "extra"],
        ["jobs.yaml", "--", "extra"],
        ["--progress", "never", "jobs.yaml"],
        ["help"],
        [],
    ]

    @Test func whatTheQuickReaderReadsIsWhatArgumentParserReads() throws {
        for arguments in Self.read {
            let quick = try #require(RunOptions(quicklyParsing: arguments), "\(arguments)")
            let parsed = try RunCommand.parse(arguments).options
            #expect(quick == parsed, "\(arguments)")
        }
    }

    @Test func everythingElseIsLeftToArgumentParser() {
        for arguments in Self.leftToArgumentParser {
            #expect(RunOptions(quicklyParsing: arguments) == nil, "\(arguments)")
        }
        // Some of them are valid: ArgumentParser reads them.
        #expect((try? RunCommand.parse(["jobs.yaml", "--report", "json", "r.json"]))?.options.report == ["json", "r.json"])
        #expect((try? RunCommand.parse(["jobs.yaml", "--concurrency", "2", "--concurrency", "3"]))?.options.concurrency == 3)
    }

    @Test func theQuickReaderKnowsOnlyRunsOwnOptions() {
        let help = RunCommand.helpMessage(columns: 400)
        for name in RunOptions.quickOptionNames {
            #expect(help.contains(name + " ") || help.contains(name + "\n"), "\(name)")
        }
    }
}
