import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// `from:` entries: what the loader checks before any record is read, what validate reports for each
/// record (at its place in the data file, capped), and runs against the local server.
@Suite struct DataFileJobsTests {
    static let routes = """
        version: 1
        service: wiki
        base_url: ${BASE}
        routes:
          page:
            path: /echo
            params:
              title: {type: string, required: true}
              rev: {type: integer, minimum: 1}
            parameters: {title: "{{title}}", rev: "{{rev}}"}
        """

    @Test func theLoaderChecksColumnsParamsKeysAndNeeds() throws {
        let fixture = try ConfigFixture([
            "wiki.yaml": Self.routes,
            "titles.csv": "title,revision\nAlpha,1\n",
            "jobs.yaml": """
                version: 1
                include: [wiki.yaml]
                jobs:
                  - id: page
                    route: wiki.page
                    from: {file: titles.csv}
                    params: {title: "{{row.titel}}", rev: "{{row.revision}}"}
                    save: "pages/{{row.title}}-{{lang}}.json"
                  - {id: other, url: "http://x/{{row.id}}", key: "{{row.id}}"}
                  - {id: later, url: "http://x/", needs: [page]}
                  - {id: odd, url: "http://x/", from: {file: titles.dat}}
                  - {id: gone, url: "http://x/", from: nothing.csv}
                  - {id: twice, url: "http://x/{{row.a}}", from: twice.csv, key: "{{row.a}}"}
                """,
            "twice.csv": "a,b,a,\n1,2,3,4\n",
        ])
        let text = fixture.diagnostics("jobs.yaml", environment: ["BASE": "http://127.0.0.1:1"])
        #expect(text.contains("jobs.yaml:7:21: error: '{{row.titel}}': the data file 'titles.csv' has no column 'titel' (did you mean '{{row.title}}'?)"), "\(text)")
        #expect(text.contains("error: '{{lang}}' in job 'page' is not one of its params"), "\(text)")
        #expect(text.contains("error: 'key' names the jobs of a data file or a fan-out; job 'other' has no 'from' or 'for_each'"), "\(text)")
        #expect(text.contains("error: '{{row.id}}' in job 'other' is not one of its params"), "\(text)")
        #expect(text.contains("error: job 'later' needs 'page', whose jobs come from a data file"), "\(text)")
        #expect(text.contains("error: cannot tell the format of the data file 'titles.dat' from its name"), "\(text)")
        #expect(text.contains("error: cannot read the data file 'nothing.csv': No such file or directory"), "\(text)")
        #expect(text.contains("warning: the data file 'twice.csv' names the column 'a' twice; {{row.a}} is the first"), "\(text)")
        #expect(text.contains("warning: the data file 'twice.csv' has a column without a name in its header row"), "\(text)")
    }

    @Test func validateReportsEveryBadRecordAtItsPlaceCapped() throws {
        var rows = ["title,rev"]
        for n in 1...150 { rows.append("T\(n),\(n % 2 == 0 ? "x" : String(n))") }  // every even row's rev is not an integer
        rows.append("T1,1")         // a duplicate key
        rows.append("../../etc,3")  // an output path outside output_dir
        let fixture = try ConfigFixture([
            "wiki.yaml": Self.routes,
            "titles.csv": rows.joined(separator: "\n") + "\n",
            "jobs.yaml": """
                version: 1
                include: [wiki.yaml]
                settings: {output_dir: out}
                jobs:
                  - id: page
                    route: wiki.page
                    from: {file: titles.csv}
                    key: "{{row.title}}"
                    params: {title: "{{row.title}}", rev: "{{row.rev}}"}
                    save: "pages/{{row.title}}.json"
                """,
        ])
        var config = fixture.load("jobs.yaml", environment: ["BASE": "http://127.0.0.1:1"])
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
        let records = config.checkDataFiles(limit: 50)
        #expect(records == 152)
        let shown = config.diagnostics.map { "\($0.location): \($0.code): \($0.message)".replacingOccurrences(of: fixture.directory + "/", with: "") }
        #expect(shown.count == 51)
        #expect(shown[0] == "titles.csv:3:4: invalid-param: param 'rev' must be an integer, found 'x' (job 'page[T2]')")
        #expect(shown[1] == "titles.csv:5:4: invalid-param: param 'rev' must be an integer, found 'x' (job 'page[T4]')")
        #expect(shown.last?.hasSuffix("more-record-problems: the data file 'titles.csv' has 27 more records that make no job (the first 50 are shown)") == true,
                "75 bad revs + 1 duplicate + 1 escape = 77, 50 shown: \(shown.last ?? "")")

        var all = fixture.load("jobs.yaml", environment: ["BASE": "http://127.0.0.1:1"])
        all.checkDataFiles(limit: 1000)
        let tail = all.diagnostics.suffix(2).map { "\($0.location): \($0.code): \($0.message)".replacingOccurrences(of: fixture.directory + "/", with: "") }
        #expect(tail == ["titles.csv:152:1: duplicate-key: the key 'T1' is used twice (first on line 2): job 'page[T1]'",
                         "titles.csv:153:1: path-escapes-output: output path 'pages/../../etc.json' of job 'page[../../etc]' is outside output_dir"])
    }

    /// A CSV row is read by column: a short row that lacks a column a template uses makes no job
    /// (reported at the row), a name the header repeats is read from its first column, and a
    /// record's values and positions are the row's, by name.
    @Test func aShortRowIsReportedAndARepeatedNameReadsItsFirstColumn() throws {
        let fixture = try ConfigFixture([
            "rows.csv": "id,name,id\n1,one,9\n2\n3,\"th,ree\",8\n",
            "jobs.yaml": """
                version: 1
                settings: {output_dir: out}
                jobs:
                  - id: item
                    url: "http://127.0.0.1:1/items/{{row.id}}?name={{row.name}}&n={{row.number}}"
                    from: {file: rows.csv}
                    key: "{{row.id}}"
                    save: "items/{{row.id}}.json"
                """,
        ])
        var config = fixture.load("jobs.yaml", environment: [:])
        #expect(!config.hasErrors, "\(config.diagnostics)")
        #expect(config.checkDataFiles(limit: 10) == 3)
        let shown = config.diagnostics.filter { $0.severity == .error }.map { "\($0.location): \($0.code): \($0.message)".replacingOccurrences(of: fixture.directory + "/", with: "") }
        #expect(shown == ["rows.csv:3:1: missing-column: the record has no 'name'"])

        let iterator = try #require(config.dataFileJobs.first).makeIterator()
        var jobs: [ExpandedJob] = []
        while let item = try iterator.next() { if case .job(let job) = item { jobs.append(job) } }
        #expect(jobs.map(\.id) == ["item[1]", "item[3]"])
        #expect(try jobs[0].router.makeRequest().url.absoluteString == "http://127.0.0.1:1/items/1?name=one&n=1")
        #expect(jobs[1].bindings == ["row.id": .string("3"), "row.name": .string("th,ree"), "row.number": .int(3)])
        #expect(jobs.map { $0.savePath.map { String($0.suffix(13)) } } == ["/items/1.json", "/items/3.json"])

        let reader = try DataRecordReader(DataFile(displayPath: "rows.csv", path: fixture.directory + "/rows.csv", format: .csv))
        var records: [DataRecord] = []
        while let read = try reader.next() { records.append(try read.get()) }
        #expect(records.map(\.values) == [["id": .string("1"), "name": .string("one")], ["id": .string("2")],
                                           ["id": .string("3"), "name": .string("th,ree")]])
        #expect([records[2].position(of: "name")].map { [$0.line, $0.column] } == [[4, 3]])
        #expect([records[1].position(of: "name")].map { [$0.line, $0.column] } == [[3, 1]])
    }

    func run(_ server: TestServer, _ fixture: ConfigFixture, shard: Shard? = nil, monitors: [any EventMonitor] = []) async throws -> RunSummary {
        let config = fixture.load("jobs.yaml", environment: ["BASE": server.baseURL], mode: .run)
        #expect(!config.hasErrors, "\(config.diagnostics)")
        var plan = try RunPlan(config: config)
        if let shard { plan.apply(shard) }
        return await Runner(config: config, plan: plan, options: Runner.Options(concurrency: 8), monitors: monitors).run()
    }

    /// A run of a data file's jobs: each record fetched once with its values, after what it needs;
    /// bad records fail at their place (a `..` that leaves output_dir is `path_escape`, at run
    /// time) and the others go on; only the written-out job's result is kept, every job is counted.
    @Test func aRunFetchesEveryRecordAfterItsNeeds() async throws {
        let server = try await TestServer.start()
        var rows = ["id,name"]
        for n in 1...300 { rows.append("\(n),name \(n)") }
        rows.append("../../x,escapes")
        rows.append("7,again")
        let fixture = try ConfigFixture([
            "ids.csv": rows.joined(separator: "\n") + "\n",
            "jobs.yaml": """
                version: 1
                settings: {output_dir: out}
                jobs:
                  - {id: login, url: "${BASE}/echo?login=1"}
                  - id: item
                    url: "${BASE}/echo?id={{row.id}}&name={{row.name}}"
                    from: {file: ids.csv}
                    key: "{{row.id}}"
                    needs: [login]
                    save: "items/{{row.id}}.json"
                """,
        ])
        let collector = ResultCollector()
        let summary = try await run(server, fixture, monitors: [collector])
        #expect(summary.jobCount == 303)
        #expect(summary.count(.succeeded) == 301)
        #expect(summary.count(.failed) == 2)
        #expect(summary.results.map(\.job) == ["login"], "only the written-out job's result is kept")
        #expect(Set(summary.failures.compactMap { $0.error?.code }) == [.pathEscape, .invalidRecord])
        #expect(summary.failures.first { $0.error?.code == .pathEscape }?.error?.message
                == fixture.directory + "/ids.csv:302:1: output path 'items/../../x.json' of job 'item[../../x]' is outside output_dir")
        let requests = server.state.requests.map(\.uri)
        #expect(requests.first == "/echo?login=1", "the need ran first")
        #expect(requests.count == 301)
        #expect(Set(requests.dropFirst()) == Set((1...300).map { "/echo?id=\($0)&name=name%20\($0)" }))
        let saved = try FileManager.default.contentsOfDirectory(atPath: fixture.path("out/items"))
        #expect(saved.count == 300)
        #expect(!FileManager.default.fileExists(atPath: fixture.path("x.json")))
        #expect(collector.results.count == 303, "every job finished once, for monitors and reports")
        try await server.shutdown()
    }

    /// A placeholder may stand in the host: a data file that names a host a row. The URL is checked
    /// again with the row's value; a value that makes no URL (an empty host) fails that job only
    /// (`invalid_request`), before any lookup.
    @Test func aRowMayNameTheHost() async throws {
        let server = try await TestServer.start()
        let port = try #require(URL(string: server.baseURL)?.port)
        let fixture = try ConfigFixture([
            "hosts.csv": "n,host\n1,127.0.0.1\n2,localhost\n3,\n",
            "jobs.yaml": """
                version: 1
                settings: {output_dir: out}
                jobs:
                  - id: get
                    url: "http://{{row.host}}:\(port)/echo?n={{row.n}}"
                    from: hosts.csv
                    key: "{{row.n}}"
                """,
        ])
        #expect(fixture.load("jobs.yaml").diagnostics.isEmpty)
        let summary = try await run(server, fixture)
        #expect(summary.count(.succeeded) == 2)
        #expect(summary.failures.map { $0.error?.code } == [.invalidRequest])
        #expect(Set(server.state.requests.map(\.uri)) == ["/echo?n=1", "/echo?n=2"])
        try await server.shutdown()
    }

    /// Shards split a data file's jobs by id: every record runs in exactly one shard, and the job
    /// they need runs in every shard.
    @Test func shardsSplitADataFile() async throws {
        let server = try await TestServer.start()
        let fixture = try ConfigFixture([
            "ids.txt": (1...400).map(String.init).joined(separator: "\n"),
            "jobs.yaml": """
                version: 1
                jobs:
                  - {id: token, url: "${BASE}/echo?token=1"}
                  - {id: item, url: "${BASE}/echo?id={{row.line}}", from: {file: ids.txt}, key: "{{row.line}}", needs: [token]}
                """,
        ])
        var counts: [Int] = []
        for index in 1...3 {
            let summary = try await run(server, fixture, shard: try Shard(index: index, count: 3))
            #expect(summary.results.map(\.job) == ["token"])
            counts.append(summary.jobCount - 1)
        }
        #expect(counts.reduce(0, +) == 400)
        #expect(counts.allSatisfy { abs($0 - 133) <= 40 }, "\(counts)")
        let items = server.state.requests.map(\.uri).filter { $0.contains("id=") }
        #expect(items.count == 400 && Set(items).count == 400, "every record fetched exactly once")
        #expect(server.state.requests.filter { $0.uri == "/echo?token=1" }.count == 3)
        try await server.shutdown()
    }
}

extension DataFileJobsTests {
    /// A file whose every record is bad is reported a batch at a time, and the run still ends.
    @Test func aFileOfBadRecordsFailsEachAndEnds() async throws {
        let server = try await TestServer.start()
        let fixture = try ConfigFixture([
            "ids.csv": "id,name\n" + (1...1_000).map { "\($0)" }.joined(separator: "\n") + "\n",  // no name anywhere
            "jobs.yaml": """
                version: 1
                jobs:
                  - {id: item, url: "${BASE}/echo?id={{row.id}}&name={{row.name}}", from: {file: ids.csv}, key: "{{row.id}}"}
                """,
        ])
        let collector = ResultCollector()
        let summary = try await run(server, fixture, monitors: [collector])
        #expect(summary.count(.failed) == 1_000)
        #expect(summary.tally.errors == ["invalid_record": 1_000])
        #expect(collector.results.count == 1_000)
        #expect(server.state.requests.isEmpty)
        try await server.shutdown()
    }
}

/// Every job result a run reports, in order.
final class ResultCollector: EventMonitor, @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [JobResult] = []
    var results: [JobResult] { lock.withLock { collected } }
    func jobDidFinish(_ result: JobResult) { lock.withLock { collected.append(result) } }
}
