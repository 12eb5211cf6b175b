import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit
#if canImport(Glibc)
import Glibc
#endif

/// A saved response's cache body is a hard link to the job's file, not a second copy; the link is
/// checked before it is served, so an output edited in place is never served back as the response.
@Suite struct LinkedBodyTests {
    static let jobs = """
        settings: {output_dir: out}
        jobs:
          - {id: one, url: "${BASE}/cache/linked?max_age=600&size=5000&fixed=1", save: one.bin}
        """

    func status(_ path: String) throws -> stat {
        var info = stat()
        guard stat(path, &info) == 0 else { throw FixtureError(text: "no file at \(path)") }
        return info
    }

    func bodyFiles(_ directory: String) -> [String] {
        (FileManager.default.enumerator(atPath: directory + "/bodies")?.allObjects as? [String] ?? [])
            .filter { $0.count > 3 }.map { directory + "/bodies/" + $0 }
    }

    @Test func theSavedFileAndTheBodyAreOneFile() async throws {
        let f = try CacheFixture(server: try await TestServer.start(), jobs: Self.jobs)
        let first = try await f.run()
        #expect(first.cacheUses("one") == [.miss])
        let bodies = bodyFiles(f.cacheDirectory)
        try #require(bodies.count == 1)
        let output = try status(f.files.path("out/one.bin"))
        let body = try status(bodies[0])
        #expect(output.st_ino == body.st_ino && output.st_dev == body.st_dev, "a link, not a copy")
        #expect(body.st_nlink == 2)
        // A rerun whose output is still that file, unchanged: the hit writes nothing at all.
        let second = try await f.run()
        #expect(second.cacheUses("one") == [.hit])
        let served = try status(f.files.path("out/one.bin"))
        #expect(served.st_ino == body.st_ino && served.st_nlink == 2)
        #expect(served.st_mtim.tv_sec == output.st_mtim.tv_sec && served.st_mtim.tv_nsec == output.st_mtim.tv_nsec, "not rewritten")
        #expect(served.st_size == 5000)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: f.files.path("out")).filter { $0 != "one.bin" }
        #expect(leftovers.isEmpty, "no temporary file left: \(leftovers)")
        #expect(f.requests("linked").count == 1)
        try await f.server.shutdown()
    }

    /// Outputs deleted, the cache kept (a clean workspace with a persisted cache): the hit links the
    /// stored body back into place instead of copying it.
    @Test func aHitIntoAnEmptyOutputDirectoryIsLinked() async throws {
        let f = try CacheFixture(server: try await TestServer.start(), jobs: Self.jobs)
        _ = try await f.run()
        let original = try Data(contentsOf: URL(fileURLWithPath: f.files.path("out/one.bin")))
        try FileManager.default.removeItem(atPath: f.files.path("out"))
        let bodies = bodyFiles(f.cacheDirectory)
        try #require(bodies.count == 1)
        #expect(try status(bodies[0]).st_nlink == 1)
        let second = try await f.run()
        #expect(second.cacheUses("one") == [.hit])
        let served = try status(f.files.path("out/one.bin"))
        #expect(served.st_ino == (try status(bodies[0])).st_ino, "linked, not copied")
        #expect(served.st_nlink == 2)
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.files.path("out/one.bin"))) == original)
        #expect(f.requests("linked").count == 1)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: f.files.path("out")).filter { $0 != "one.bin" }
        #expect(leftovers.isEmpty, "no temporary file left: \(leftovers)")
        try await f.server.shutdown()
    }

    /// An output replaced by another file (not edited in place: the stored body is untouched): the
    /// hit links the stored body over it under a sibling name and a rename, never leaving the
    /// destination missing or the sibling behind.
    @Test func aReplacedOutputIsLinkedOverAtomically() async throws {
        let f = try CacheFixture(server: try await TestServer.start(), jobs: Self.jobs)
        _ = try await f.run()
        let path = f.files.path("out/one.bin")
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        try FileManager.default.removeItem(atPath: path)
        try Data("another file".utf8).write(to: URL(fileURLWithPath: path))
        let second = try await f.run()
        #expect(second.cacheUses("one") == [.hit])
        let bodies = bodyFiles(f.cacheDirectory)
        try #require(bodies.count == 1)
        let served = try status(path)
        #expect(served.st_ino == (try status(bodies[0])).st_ino && served.st_nlink == 2, "linked, not copied")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == original)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: f.files.path("out")).filter { $0 != "one.bin" }
        #expect(leftovers.isEmpty, "no temporary file left: \(leftovers)")
        #expect(f.requests("linked").count == 1)
        try await f.server.shutdown()
    }

    /// Two saves of one stored response: at most one of them is the cache's body; editing one
    /// output never changes the other.
    @Test func twoSavesOfOneStoredBodyNeverShareAFile() async throws {
        let f = try CacheFixture(server: try await TestServer.start(), jobs: """
            settings: {output_dir: out}
            jobs:
              - {id: a, url: "${BASE}/cache/twice?max_age=600&size=3000&fixed=1", save: a.bin}
              - {id: b, url: "${BASE}/cache/twice?max_age=600&size=3000&fixed=1", save: b.bin, needs: [a]}
            """)
        for round in 1...2 {
            let run = try await f.run()
            #expect(run.cacheUses("b") == [.hit], "round \(round)")
            let a = try status(f.files.path("out/a.bin")), b = try status(f.files.path("out/b.bin"))
            #expect(a.st_ino != b.st_ino, "round \(round)")
            #expect(a.st_size == 3000 && b.st_size == 3000)
            try FileManager.default.removeItem(atPath: f.files.path("out"))
        }
        #expect(f.requests("twice").count == 1)
        try await f.server.shutdown()
    }

    /// A body the cache wrote itself (no `save:` when it was stored) is private to the cache
    /// (mode 0600): a later save gets a copy with the save's own mode, never that file.
    @Test func aBodyTheCacheWroteItselfIsCopiedIntoASave() async throws {
        let f = try CacheFixture(server: try await TestServer.start(), jobs: """
            settings: {output_dir: out}
            jobs:
              - {id: check, url: "${BASE}/cache/private?max_age=600&size=2000&fixed=1"}
              - {id: keep, url: "${BASE}/cache/private?max_age=600&size=2000&fixed=1", save: keep.bin, needs: [check]}
            """)
        let run = try await f.run()
        #expect(run.cacheUses("keep") == [.hit])
        let bodies = bodyFiles(f.cacheDirectory)
        try #require(bodies.count == 1)
        let body = try status(bodies[0]), saved = try status(f.files.path("out/keep.bin"))
        #expect(body.st_mode & 0o777 == 0o600)
        #expect(saved.st_ino != body.st_ino && body.st_nlink == 1)
        // The umask from /proc: setting it to read it would race with the tests creating files meanwhile.
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let umask = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }.flatMap { mode_t($0.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) }
        #expect(saved.st_mode & 0o777 == 0o644 & ~(try #require(umask)), "the save's own mode, not the cache's")
        #expect(saved.st_size == 2000)
        try await f.server.shutdown()
    }

    @Test(arguments: ["same size", "appended"])
    func anOutputEditedInPlaceIsAMiss(edit: String) async throws {
        let f = try CacheFixture(server: try await TestServer.start(), jobs: Self.jobs)
        _ = try await f.run()
        let original = try Data(contentsOf: URL(fileURLWithPath: f.files.path("out/one.bin")))
        // Edited through the output's name, in place: the cache's body is the same file.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: f.files.path("out/one.bin")))
        if edit == "same size" {
            try handle.seek(toOffset: 0)
            handle.write(Data(repeating: UInt8(ascii: "X"), count: 100))
        } else {
            try handle.seekToEnd()
            handle.write(Data("more".utf8))
        }
        try handle.close()
        let second = try await f.run()
        #expect(second.cacheUses("one") == [.miss], "the edited body is not served")
        #expect(f.requests("linked").count == 2)
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.files.path("out/one.bin"))) == original, "the server's body again")
        let third = try await f.run()
        #expect(third.cacheUses("one") == [.hit])
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.files.path("out/one.bin"))) == original)
        try await f.server.shutdown()
    }

    /// `settings.cache.dir` on another file system (tmpfs in /dev/shm): no link is possible, the
    /// finished file is copied into the cache, and hits still serve it.
    @Test func aCacheOnAnotherFileSystemKeepsACopy() async throws {
        let f = try CacheFixture(server: try await TestServer.start(), jobs: Self.jobs)
        let elsewhere = "/dev/shm/fetchctl-tests-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: elsewhere) }
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try #require(try status(elsewhere).st_dev != status(f.files.path(".")).st_dev, "/dev/shm is another file system here")
        let first = try await f.run(cacheDirectory: elsewhere)
        #expect(first.cacheUses("one") == [.miss])
        #expect(first.events.problems.isEmpty, "\(first.events.problems)")
        let bodies = bodyFiles(elsewhere)
        try #require(bodies.count == 1)
        #expect(try status(bodies[0]).st_nlink == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: bodies[0])) == Data(contentsOf: URL(fileURLWithPath: f.files.path("out/one.bin"))))
        let second = try await f.run(cacheDirectory: elsewhere)
        #expect(second.cacheUses("one") == [.hit])
        #expect(try status(f.files.path("out/one.bin")).st_size == 5000)
        try await f.server.shutdown()
    }
}
