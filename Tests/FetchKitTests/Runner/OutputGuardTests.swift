import Foundation
import FetchKitTesting
import Testing
@testable import FetchKit

/// The run-time guard on output paths, by itself: `..` and links out of `output_dir` are refused.
@Suite struct OutputGuardTests {
    @Test func dotDotAndLinksOutAreRefusedInsideIsFine() throws {
        let base = try TemporaryDirectory.make(prefix: "fetchctl-tests-guard")
        let out = base + "/out"
        try FileManager.default.createDirectory(atPath: out + "/real", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/elsewhere", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out + "/away", withDestinationPath: base + "/elsewhere")
        try FileManager.default.createSymbolicLink(atPath: out + "/alias", withDestinationPath: out + "/real")
        let guardian = OutputGuard(outputDir: out)
        for inside in ["real/a.json", "new/dir/b.json", "alias/c.json", "./d.json"] {
            try guardian.check(out + "/" + inside)
        }
        for outside in ["../x.json", "real/../../x.json", "away/e.json", "away/deeper/f.json"] {
            #expect(throws: FetchError.self, "\(outside)") { try guardian.check(out + "/" + outside) }
            do { try guardian.check(out + "/" + outside) } catch let error as FetchError { #expect(error.code == .pathEscape) }
        }
        // Right after a path inside a directory (the last one found inside is remembered), a
        // directory of a name that starts the same, or a link beside it, is still checked.
        try FileManager.default.createDirectory(atPath: base + "/elsewhere/sub", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out + "/real2", withDestinationPath: base + "/elsewhere/sub")
        for (inside, outside) in [("real/g.json", "real2/g.json"), ("real/h.json", "away/h.json"), ("real/i.json", "real/../away/i.json")] {
            try guardian.check(out + "/" + inside)
            #expect(throws: FetchError.self, "\(outside)") { try guardian.check(out + "/" + outside) }
        }
        #expect(throws: FetchError.self) { try guardian.check(out) }
        #expect(throws: FetchError.self) { try guardian.check(out + "x/j.json") }
    }
}
