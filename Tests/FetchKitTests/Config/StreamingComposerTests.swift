import Foundation
import Testing
import Yams
@testable import FetchKit

/// The loader composes files itself, handing `jobs:` items over one at a time; what it builds must be
/// exactly what `Yams.compose` builds (values, tags, styles and the marks every diagnostic is placed
/// by), and every document Yams refuses must be refused too, so the loader can fall back to Yams.
@Suite struct StreamingComposerTests {
    /// `text` written to `jobs.yaml` in a directory of its own, removed with this value.
    final class JobsFile {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("streaming-\(UUID().uuidString)")
        var path: String { directory.appendingPathComponent("jobs.yaml").path }

        init(_ text: String) throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    static let tricky = [
        "version: 1\njobs:\n  - {id: a, url: \"http://h/a\", save: a.json}\n  - id: b\n    url: http://h/b\n",
        "jobs:\n- id: a\n  url: http://h/a\n  params: {x: 'quoted', y: \"dq\", z: |\n      block\n      text\n    }\n",
        "version: 1\njobs: [{id: a, url: 'http://h/a'}, {id: b, url: 'http://h/b'}]\n",
        "version: 1\nsettings: &s {concurrency: 2}\njobs:\n  - &j {id: a, url: \"http://h/é/a\"}\n  - *j\nother: *s\n",
        "# comment only\n",
        "",
        "---\nversion: 1\njobs: []\n...\n",
        "version: !!str 1\njobs: !!seq\n  - !!map {id: !!str 7, url: http://h}\n",
        "version: 1\njobs:\n  - id: a\n    headers: {X-Ünïcode: \"✓\"}\n    url: http://h/a\n  - id: b\n    url: http://h/b\n",
        "list:\n  - jobs:\n      - {id: nested}\njobs: &anchored\n  - {id: a}\nagain: *anchored\n",
    ]
    static let broken = [
        "version: 1\njobs:\n  - {id: a\n  - {id: b}\n",              // unclosed flow mapping
        "version: 1\njobs:\n  - id: a\n    id: b\n",                  // a key twice
        "version: 1\njobs:\n  - *missing\n",                          // undefined alias
        "version: 1\n---\nversion: 2\n",                              // two documents
        "version: 1\n  bad indent: x\n",
        "jobs:\n  - {id: a}\njobs:\n  - {id: b}\n",                    // top-level key twice
    ]

    static func files() -> [String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let examples = root.appendingPathComponent("examples").path
        var paths = InvalidCorpus.files
        for directory in (try? FileManager.default.contentsOfDirectory(atPath: examples)) ?? [] {
            let full = (examples as NSString).appendingPathComponent(directory)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: full)) ?? [] where name.hasSuffix(".yaml") {
                paths.append((full as NSString).appendingPathComponent(name))
            }
        }
        return paths
    }

    /// Asserts two trees are equal node by node, marks included.
    static func expectSame(_ a: Node, _ b: Node, _ where_: String) {
        #expect(a.mark?.line == b.mark?.line && a.mark?.column == b.mark?.column, "mark at \(where_)")
        #expect(a.tag.description == b.tag.description, "tag at \(where_)")
        switch (a, b) {
        case (.scalar(let x), .scalar(let y)):
            #expect(x.string == y.string && x.style == y.style && x.anchor == y.anchor, "scalar at \(where_)")
        case (.sequence(let x), .sequence(let y)):
            #expect(x.count == y.count, "sequence length at \(where_)")
            for (i, (p, q)) in zip(x, y).enumerated() { expectSame(p, q, "\(where_)[\(i)]") }
        case (.mapping(let x), .mapping(let y)):
            #expect(x.count == y.count && x.style == y.style, "mapping at \(where_)")
            for ((k1, v1), (k2, v2)) in zip(x, y) {
                expectSame(k1, k2, "\(where_) key \(k1.string ?? "?")")
                expectSame(v1, v2, "\(where_).\(k1.string ?? "?")")
            }
        default:
            Issue.record("different kinds at \(where_)")
        }
    }

    /// Composes `text` both ways and compares; the streamed items are put back into `jobs:`.
    static func compare(_ text: String, _ name: String) throws {
        let expected: Node??  // nil: Yams refuses it; .some(nil): an empty document
        do { expected = .some(try Yams.compose(yaml: text, .basic)) } catch { expected = nil }
        var items: [Node] = []
        let streamed = StreamingComposer(text: text, resolver: .basic).compose { items.append($0) }
        guard let expected else {
            #expect(streamed == nil, "\(name): Yams refuses it, so must the streaming composer")
            return
        }
        let result = try #require(streamed, "\(name): Yams composes it, the streaming composer refused it")
        guard let expectedRoot = expected else {
            #expect(result.root == nil, "\(name): empty")
            return
        }
        var root = try #require(result.root, "\(name): no root")
        if result.streamed {
            guard case .mapping(var mapping) = root, case .sequence(let list)? = mapping["jobs"] else {
                Issue.record("\(name): streamed without a jobs list")
                return
            }
            #expect(list.isEmpty, "\(name): the streamed list keeps no items")
            mapping["jobs"] = .sequence(.init(items, list.tag, list.style, list.mark))
            root = .mapping(mapping)
        } else {
            #expect(items.isEmpty, "\(name): items handed over without streaming")
        }
        expectSame(root, expectedRoot, name)
    }

    @Test func buildsWhatYamsBuildsForEveryExampleAndFixture() throws {
        let files = Self.files()
        #expect(files.count > 40)
        for path in files {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            try Self.compare(text, path)
        }
    }

    @Test(arguments: tricky + broken) func buildsWhatYamsBuilds(text: String) throws {
        try Self.compare(text, text)
    }

    @Test func streamsTheJobsListAndOnlyIt() throws {
        var ids: [String] = []
        let result = try #require(StreamingComposer(text: Self.tricky[0], resolver: .basic).compose { node in
            ids.append(node["id"]?.string ?? "?")
        })
        #expect(result.streamed)
        #expect(ids == ["a", "b"])
        // A nested `jobs:` is not the file's list; an anchored list may be aliased, so it is kept whole.
        var handed = 0
        let nested = try #require(StreamingComposer(text: Self.tricky[9], resolver: .basic).compose { _ in handed += 1 })
        #expect(!nested.streamed && handed == 0)
    }

    /// The root mapping's other values are handed over as they are composed, in file order with
    /// the streamed jobs: a `settings:` written before `jobs:` is known before any job is read.
    @Test func topLevelValuesComeAsTheyAreComposed() throws {
        let text = "version: 1\nsettings: {output_dir: out}\njobs:\n  - {id: a, url: http://h/a}\n  - {id: b, url: http://h/b}\ndescription: last\n"
        var events: [String] = []
        let result = try #require(StreamingComposer(text: text, resolver: .basic).compose(onJob: { node in
            events.append("job " + (node["id"]?.string ?? "?"))
        }, onTopLevel: { key, _ in events.append(key) }))
        #expect(result.streamed)
        #expect(events == ["version", "settings", "job a", "job b", "description"])
    }

    /// `onJobsFileSettings` (the state directory opens when it is called) is called once, as soon
    /// as the settings are composed, with the settings the loaded file has; and once for a file
    /// whose settings come after its jobs, or that has none. A second call would try to lock the
    /// state directory a second time.
    @Test(arguments: [
        "version: 1\nsettings: {concurrency: 3, output_dir: o}\njobs:\n  - {id: a, url: http://h/a, save: a}\n",
        "version: 1\njobs:\n  - {id: a, url: http://h/a, save: a}\nsettings: {concurrency: 3, output_dir: o}\n",
        "version: 1\njobs:\n  - {id: a, url: http://h/a, save: a}\n",
    ])
    func theJobsFilesSettingsAreAnnouncedOnce(text: String) throws {
        let file = try JobsFile(text)
        defer { withExtendedLifetime(file) {} }  // the directory goes with it
        let path = file.path
        let announced = LockedBox<[Settings]>([])
        var loader = ConfigLoader(environment: [:], mode: .run)
        loader.onJobsFileSettings = { settings in announced.withLock { $0.append(settings) } }
        let config = loader.load([path])
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics.map(\.message))")
        let calls = announced.withLock { $0 }
        #expect(calls.count == 1)
        #expect(calls.first?.concurrency == config.jobsFile?.settings.concurrency)
        #expect(calls.first?.outputDir == config.jobsFile?.settings.outputDir)
        #expect(calls.first?.stateDir == config.jobsFile?.settings.stateDir)
    }

    /// `onFirstJob` (`fetchctl run` opens the first job's connection when it is called) is called
    /// once, with the first job made, before the rest is checked; not when an error came before it.
    @Test(arguments: [
        ("version: 1\njobs:\n  - {id: f, url: \"http://h/{{matrix.n}}\", matrix: {n: [1, 2, 3]}}\n  - {id: g, url: http://h/g}\n", "f[n=1]"),
        // An error after the first job: it was announced all the same (not a promise of validity).
        ("version: 1\njobs:\n  - {id: f, url: http://h/f}\n  - {id: f, url: http://h/g}\n", "f"),
        // An error before it: nothing is announced.
        ("version: 1\njobs:\n  - {id: f, route: nowhere.at.all}\n  - {id: g, url: http://h/g}\n", nil),
    ] as [(String, String?)])
    func theFirstJobIsAnnouncedOnce(text: String, first: String?) throws {
        let file = try JobsFile(text)
        defer { withExtendedLifetime(file) {} }  // the directory goes with it
        let path = file.path
        let announced = LockedBox<[String]>([])
        var loader = ConfigLoader(environment: [:], mode: .run)
        loader.onFirstJob = { job in announced.withLock { $0.append(job.id) } }
        _ = loader.load([path])
        #expect(announced.withLock { $0 } == (first.map { [$0] } ?? []))
    }

    /// The loader's diagnostics for a broken file are Yams's, found by composing the file again.
    @Test func aBrokenFileIsReportedAsBefore() throws {
        let file = try JobsFile("version: 1\njobs:\n  - {id: 'bad id!', url: http://h/a}\n  - {id: b, url: http://h/b\n")
        defer { withExtendedLifetime(file) {} }  // the directory goes with it
        let path = file.path
        let config = ConfigLoader(environment: [:], mode: .validate).load([path])
        let codes = config.diagnostics.map(\.code)
        // Only the YAML error: the bad id read before the error is not reported half-way.
        #expect(codes == ["yaml-syntax"], "got \(codes)")
    }
}
