import ArgumentParser
import FetchKit
import Testing
@testable import FetchctlCommands

/// `ValidateCommand.quicklyParsing` reads the common `fetchctl validate` command lines without
/// ArgumentParser; what it reads must be what ArgumentParser reads, and everything else (another
/// option, a repeated or unknown `--format`, no file) must be left to ArgumentParser, which reports
/// the mistakes as before.
@Suite struct ValidateQuickReaderTests {
    /// Command lines (after `fetchctl validate`) the quick reader reads.
    static let read: [[String]] = [
        ["jobs.yaml"],
        ["a.yaml", "b.routes.yaml", "dir with spaces/c.yaml"],
        ["--format", "json", "jobs.yaml"],
        ["jobs.yaml", "--format", "github"],
        ["--format=text", "a.yaml", "b.yaml"],
        ["a.yaml", "--format=json", "b.yaml"],
    ]

    /// Command lines it leaves to ArgumentParser, valid or not.
    static let leftToArgumentParser: [[String]] = [
        [],
        ["--format", "json"],
        ["jobs.yaml", "--format"],
        ["jobs.yaml", "--format", "xml"],
        ["jobs.yaml", "--format="],
        ["jobs.yaml", "--format", "json", "--format", "text"],
        ["jobs.yaml", "--help"],
        ["jobs.yaml", "-h"],
        ["jobs.yaml", "--version"],
        ["jobs.yaml", "--bogus"],
        ["jobs.yaml", "--", "-odd.yaml"],
        ["help"],
        [""],
    ]

    @Test func whatTheQuickReaderReadsIsWhatArgumentParserReads() throws {
        for arguments in Self.read {
            let quick = try #require(ValidateCommand.quicklyParsing(arguments), "\(arguments)")
            let parsed = try ValidateCommand.parse(arguments)
            #expect(quick.files == parsed.files && quick.format == parsed.format, "\(arguments)")
        }
    }

    @Test func everythingElseIsLeftToArgumentParser() {
        for arguments in Self.leftToArgumentParser {
            #expect(ValidateCommand.quicklyParsing(arguments) == nil, "\(arguments)")
        }
        // Some of them are valid: ArgumentParser reads them.
        #expect((try? ValidateCommand.parse(["jobs.yaml", "--format", "json", "--format", "text"]))?.format == .text)
        #expect((try? ValidateCommand.parse(["jobs.yaml", "--", "-odd.yaml"]))?.files == ["jobs.yaml", "-odd.yaml"])
    }
}
