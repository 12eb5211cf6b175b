import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// Data files read a record at a time: RFC 4180 CSV with quotes and line breaks (CSV.swift), TSV,
/// JSON Lines with their types, text, gzip; where each value sits; and the count the run announces,
/// which must agree with what is read.
@Suite struct DataRecordReaderTests {
    func file(_ name: String, _ contents: String, gzip: Bool = false) throws -> DataFile {
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        var path = (directory as NSString).appendingPathComponent(name)
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        if gzip {
            #expect(try ProcessLauncher.runToEnd("/bin/gzip", ["-n", path], in: directory, environment: [:]).status == 0)
            path += ".gz"
        }
        return DataFile(displayPath: (path as NSString).lastPathComponent, path: path, format: DataFile.format(ofPath: path)!)
    }

    func read(_ file: DataFile) throws -> [Result<DataRecord, DataFileProblem>] {
        let reader = try DataRecordReader(file)
        var all: [Result<DataRecord, DataFileProblem>] = []
        while let next = try reader.next() { all.append(next) }
        return all
    }

    @Test func csvFollowsRFC4180AndKnowsWhereEachValueIs() throws {
        let csv = try file("titles.csv", "title,lang\r\nAlpha,en\r\n\"Be, \"\"ta\"\"\",de\r\n\"two\nlines\",fr\r\n\r\nlast,it")
        let records = try read(csv).map { try $0.get() }
        #expect(records.map { $0.values["title"] } == [.string("Alpha"), .string("Be, \"ta\""), .string("two\nlines"), .string("last")])
        #expect(records.map(\.number) == [1, 2, 3, 4])
        #expect(records.map(\.line) == [2, 3, 4, 7], "a quoted line break and a blank line count as lines")
        #expect(records[1].position(of: "lang") == (3, 14))
        #expect(records[2].position(of: "lang") == (5, 8), "after the quoted line break")
        #expect(try DataRecordReader.count(csv) == 4)
    }

    @Test func aRowWithTooManyFieldsIsAProblemAtItsPlace() throws {
        let csv = try file("ids.csv", "\u{FEFF}id,name\n1,a\n2,b,extra\n3,c\n")
        let all = try read(csv)
        #expect(try DataRecordReader(csv).columns == ["id", "name"], "the byte order mark is not part of the first name")
        guard case .failure(let problem) = all[1] else { Issue.record("expected a problem"); return }
        #expect((problem.line, problem.column) == (3, 5))
        #expect(problem.message == "the record has 3 fields; the header names 2")
        #expect(try all[2].get().values["id"] == .string("3"))
    }

    @Test func tsvJSONLinesAndTextAreReadToo() throws {
        let tsv = try file("t.tsv", "a\tb\nx,y\tz\n")
        #expect(try read(tsv).map { try $0.get().values } == [["a": .string("x,y"), "b": .string("z")]])

        let jsonl = try file("r.jsonl", "{\"id\": 7, \"name\": \"seven\", \"ok\": true, \"tags\": [\"a\"]}\n\n   \nnot json\n[1, 2]\n{\"id\": 8.5}\n")
        let records = try read(jsonl)
        #expect(records.count == 4)
        let first = try records[0].get()
        #expect(first.values["id"] == .int(7))
        #expect(first.values["ok"] == .bool(true))
        #expect(first.values["tags"] == .array([.string("a")]))
        #expect(first.position(of: "name") == (1, 11))
        guard case .failure(let notJSON) = records[1], case .failure(let notObject) = records[2] else { Issue.record("expected problems"); return }
        #expect(notJSON.line == 4 && notJSON.message == "the line is not JSON")
        #expect(notObject.line == 5 && notObject.message.hasPrefix("the line is JSON but not an object"))
        #expect(try records[3].get().values["id"] == .double(8.5))
        #expect(try DataRecordReader.count(jsonl) == 4)

        let text = try file("urls.txt", "https://a/1\r\n\nhttps://a/2")
        #expect(try read(text).map { try $0.get().values["line"] } == [.string("https://a/1"), .string("https://a/2")])
        #expect(try DataRecordReader.count(text) == 2)
    }

    @Test func gzipCompressedFilesReadAsTheirContents() throws {
        let rows = (1...5000).map { "\($0),\"name, \($0)\"" }.joined(separator: "\n")
        let csv = try file("big.csv", "id,name\n" + rows + "\n", gzip: true)
        #expect(csv.path.hasSuffix(".csv.gz") && csv.format == .csv)
        let records = try read(csv).map { try $0.get() }
        #expect(records.count == 5000)
        #expect(records.last?.values["name"] == .string("name, 5000"))
        #expect(records.last?.line == 5001)
        #expect(try DataRecordReader.count(csv) == 5000)
    }

    /// The counter follows CSV.swift's rule: a quote opens a quoted field only as its first character.
    @Test(arguments: [
        "a,b\n1,2\n",
        "a,b\n5\" disk,x\n\"q\"\"uoted\nacross\",y\n",
        "a,b\r\n1,\"\"\r\n\r\n\"x\r\ny\",2",
        "a\n\"never closed\n1\n2\n",
    ])
    func theCountMatchesWhatIsRead(contents: String) throws {
        let csv = try file("c.csv", contents)
        #expect(try DataRecordReader.count(csv) == read(csv).count, "\(contents.debugDescription)")
    }

    @Test func aMissingOrEmptyFileIsAnErrorThatNamesIt() throws {
        let missing = DataFile(displayPath: "nope.csv", path: "/nonexistent/nope.csv", format: .csv)
        #expect(throws: DataFileError.self) { try DataRecordReader(missing) }
        do { _ = try DataRecordReader(missing) } catch { #expect(error.message.hasPrefix("cannot read the data file 'nope.csv'")) }
        let empty = try file("empty.csv", "")
        do { _ = try DataRecordReader(empty) } catch { #expect(error.message == "the data file 'empty.csv' has no header row (the first line names the columns)") }
    }

    /// A gzip file cut short, or text that is not UTF-8, is an error naming the file, never a batch
    /// that quietly ends early.
    @Test func aTruncatedGzipOrNonUTF8FileIsAnError() throws {
        for format in ["c.csv", "c.txt"] {
            let whole = try file(format, "id\n" + (1...2_000).map(String.init).joined(separator: "\n") + "\n", gzip: true)
            let data = try Data(contentsOf: URL(fileURLWithPath: whole.path))
            try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: whole.path))
            do {
                _ = try read(whole)
                Issue.record("\(format): a truncated gzip file was read without an error")
            } catch let error as DataFileError {
                #expect(error.message.hasPrefix("cannot read the data file '\(whole.displayPath)': unexpected end of file"), "\(error.message)")
            }
        }
        let directory = try TemporaryDirectory.make(prefix: "fetchctl-tests")
        let path = directory + "/latin1.csv"
        try Data("id\n1\ncaf\u{E9}\n".utf8.map { $0 == 0xC3 ? 0xE9 : $0 }.filter { $0 != 0xA9 }).write(to: URL(fileURLWithPath: path))
        let latin1 = DataFile(displayPath: "latin1.csv", path: path, format: .csv)
        #expect(throws: DataFileError.self) { _ = try read(latin1) }
        do { _ = try read(latin1) } catch let error as DataFileError {
            #expect(error.message == "the data file 'latin1.csv' is not UTF-8 text (at line 3); save it as UTF-8")
        }
    }
}
