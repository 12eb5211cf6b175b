import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// A download's record belongs to its destination: a rerun with another URL (a re-signed or rotated
/// link) resumes when a strong validator vouches for the file, and starts over otherwise.
@Suite struct ResumeAcrossURLsTests {
    static let old = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }

    /// The first run dies after 150,000 bytes of `/files/data.bin` (reached through `path`, with
    /// `query`), leaving a `.part`; returns the fixture for the rerun.
    func interrupted(_ server: TestServer, path: String = "files/data.bin", query: String) async throws -> ConfigFixture {
        server.state.setFile("data.bin", bytes: Self.old)
        let (first, fixture) = try await DownloadTests().run(server, job(path: path, query: query + "&drop_after=150000&key=first&times=1"))
        #expect(first.results.first?.error?.code == .truncated)
        #expect(FileIO.size(fixture.path("out/data.bin.part")).map { $0 > 0 } == true)
        return fixture
    }

    func job(path: String = "files/data.bin", query: String) -> String {
        """
        jobs:
          - {id: data, url: "${BASE}/\(path)?\(query)", download: data.bin, retry: {limit: 0}}
        """
    }

    func output(_ fixture: ConfigFixture) -> [UInt8]? {
        DownloadTests().bytes(fixture, "out/data.bin")
    }

    @Test func theSameFileAtANewURLResumes() async throws {
        let server = try await TestServer.start()
        let fixture = try await interrupted(server, query: "sig=first")
        let part = try #require(FileIO.size(fixture.path("out/data.bin.part")))
        let recorder = DownloadRecorder()
        let (second, _) = try await DownloadTests().run(server, job(query: "sig=second"), fixture: fixture, recorder: recorder)
        #expect(second.results.first?.outcome == .succeeded)
        let resume = try #require(server.state.requests.last)
        #expect(resume.uri.contains("sig=second"))
        #expect(resume.header("Range") == "bytes=\(part)-")
        #expect(resume.header("If-Range")?.hasPrefix("\"") == true, "the strong entity tag")
        #expect(resume.header("Accept-Encoding") == "identity")
        #expect(recorder.resumed == [part])
        #expect(recorder.restarted.isEmpty)
        #expect(DownloadTests.sha256(output(fixture) ?? []) == DownloadTests.sha256(Self.old))
        try await server.shutdown()
    }

    @Test func aChangedFileAtANewURLStartsOver() async throws {
        let server = try await TestServer.start()
        let fixture = try await interrupted(server, query: "sig=first")
        let new = (0..<500_000).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 5) }
        server.state.setFile("data.bin", bytes: new)
        let recorder = DownloadRecorder()
        let (second, _) = try await DownloadTests().run(server, job(query: "sig=second"), fixture: fixture, recorder: recorder)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(server.state.requests.last?.header("If-Range") != nil, "asked, and the server said 200")
        #expect(recorder.restarted.map(\.reason) == ["changed"])
        #expect(output(fixture) == new)
        try await server.shutdown()
    }

    /// A weak entity tag can't vouch for bytes (If-Range compares strongly): it is never sent, nor
    /// is the date with it, and the download starts over.
    @Test func aWeakEntityTagIsNeverSentInIfRange() async throws {
        let server = try await TestServer.start()
        let fixture = try await interrupted(server, query: "validators=weak")
        let recorder = DownloadRecorder()
        let (second, _) = try await DownloadTests().run(server, job(query: "validators=weak"), fixture: fixture, recorder: recorder)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(server.state.requests.allSatisfy { $0.header("If-Range") == nil && $0.header("Range") == nil })
        #expect(output(fixture) == Self.old)
        try await server.shutdown()
    }

    /// Without an entity tag, a `Last-Modified` well before the server's `Date` is strong (RFC 9110
    /// §8.8.2.2) and resumes the download, at a new URL too.
    @Test func aStrongLastModifiedResumes() async throws {
        let server = try await TestServer.start()
        let fixture = try await interrupted(server, query: "validators=last_modified&sig=a")
        let recorder = DownloadRecorder()
        let (second, _) = try await DownloadTests().run(server, job(query: "validators=last_modified&sig=b"), fixture: fixture, recorder: recorder)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(server.state.requests.last?.header("If-Range") == "Sat, 21 Nov 2026 12:00:00 GMT")
        #expect(recorder.resumed.count == 1)
        #expect(output(fixture) == Self.old)
        try await server.shutdown()
    }

    @Test func noValidatorAndANewURLStartsOver() async throws {
        let server = try await TestServer.start()
        let fixture = try await interrupted(server, query: "validators=none&sig=a")
        let part = try #require(FileIO.size(fixture.path("out/data.bin.part")))
        let recorder = DownloadRecorder()
        let (second, _) = try await DownloadTests().run(server, job(query: "validators=none&sig=b"), fixture: fixture, recorder: recorder)
        #expect(second.results.first?.outcome == .succeeded)
        #expect(server.state.requests.last?.header("Range") == nil)
        #expect(recorder.restarted.map(\.reason) == ["url_changed"])
        #expect(recorder.restarted.map(\.offset) == [part])
        #expect(output(fixture) == Self.old)
        try await server.shutdown()
    }

    /// A signed URL that redirects to the file: the validator is the final response's, and the
    /// rerun's new signature resumes through the redirect.
    @Test func aRedirectingSignedURLResumes() async throws {
        let server = try await TestServer.start()
        let target = "/files/data.bin?drop_after=150000%26key=redirected%26times=1"
        server.state.setFile("data.bin", bytes: Self.old)
        let first = "jobs:\n  - {id: data, url: \"${BASE}/redirect-to?sig=one&url=\(target)\", download: data.bin, retry: {limit: 0}}\n"
        let (run1, fixture) = try await DownloadTests().run(server, first)
        #expect(run1.results.first?.error?.code == .truncated)
        let recorder = DownloadRecorder()
        let second = "jobs:\n  - {id: data, url: \"${BASE}/redirect-to?sig=two&url=/files/data.bin\", download: data.bin, retry: {limit: 0}}\n"
        let (run2, _) = try await DownloadTests().run(server, second, fixture: fixture, recorder: recorder)
        #expect(run2.results.first?.outcome == .succeeded)
        let final = try #require(server.state.requests.last)
        #expect(final.path.hasPrefix("/files/data.bin"))
        #expect(final.header("If-Range") != nil && final.header("Range") != nil)
        #expect(recorder.resumed.count == 1)
        #expect(DownloadTests.sha256(output(fixture) ?? []) == DownloadTests.sha256(Self.old))
        try await server.shutdown()
    }
}
