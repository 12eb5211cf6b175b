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
        // The hit is written as a file of its own (copied), so outputs never share storage.
        let second = try await f.run()
        #expect(second.cacheUses("one") == [.hit])
        let served = try status(f.files.path("out/one.bin"))
        #expect(served.st_ino != body.st_ino)
        #expect(served.st_size == 5000)
        #expect(f.requests("linked").count == 1)
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
