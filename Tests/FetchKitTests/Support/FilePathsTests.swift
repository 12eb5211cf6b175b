import FetchKitTesting
import Foundation
import Testing
@testable import FetchKit

/// `FilePaths.standardized` gives what Foundation's `standardizingPath` gives, for paths through
/// real directories, missing ones and symbolic links.
@Suite struct FilePathsTests {
    @Test func standardizedIsFoundationsStandardizingPath() throws {
        let root = try TemporaryDirectory.make(prefix: "fetchctl-paths")
        let fm = FileManager.default
        try fm.createDirectory(atPath: root + "/real/inner", withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: root + "/link", withDestinationPath: root + "/real")
        try fm.createSymbolicLink(atPath: root + "/real/up", withDestinationPath: "..")
        let paths = [
            "/", "//", "/.", "/..", "/../..", "/tmp", "/tmp/", "//tmp//", root, root + "/", root + "/.", root + "/real",
            root + "/real/inner", root + "/real/./inner/", root + "/real/inner/..", root + "/real/inner/../..",
            root + "/real/../real/inner", root + "/missing", root + "/missing/deeper/file.bin", root + "/missing/../real/inner",
            root + "/link", root + "/link/inner", root + "/link/inner/../x", root + "/real/up/real", root + "/real/up",
            root + "/out dir/é/ü.bin", "/private/tmp", "/privatex", "/var/automount/x", "relative/path", "./x", "../x", "~/x",
        ]
        for path in paths {
            #expect(FilePaths.standardized(path) == (path as NSString).standardizingPath, "\(path)")
        }
        // And the links were followed (the comparison above would also hold if neither did).
        #expect(FilePaths.standardized(root + "/link/inner") == FilePaths.standardized(root + "/real/inner"))
    }
}
