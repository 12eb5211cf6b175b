import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Paths from the command line and the config, made standard as Foundation's
/// `NSString.standardizingPath` makes them, without its cost in the usual case.
enum FilePaths {
    /// `path` as `(path as NSString).standardizingPath` gives it.
    ///
    /// Foundation resolves symbolic links one component at a time, asking
    /// `FileManager.destinationOfSymbolicLink` of each; for a component that is no link (nearly
    /// all), that builds and throws an error with a dictionary of details, and the first one also
    /// makes the runtime look up Foundation's error types: 0.9 ms of a one-job run's 13 went to
    /// the three paths a run standardizes. Here an absolute path is walked the same way with one
    /// `readlink` a component; when none is a link, the answer is the path with its empty, `.` and
    /// `..` components resolved in place, as Foundation's is. A link on the way, a relative path,
    /// a `~` and the prefixes Foundation treats specially (`/private`, `/var/automount`) go to
    /// Foundation, which defines the result (`FilePathsTests` compares the two).
    static func standardized(_ path: String) -> String {
        guard path.utf8.first == UInt8(ascii: "/") else { return (path as NSString).standardizingPath }
        // The path resolved so far, as bytes: each step asks `readlink` about it as it stands.
        var resolved: [UInt8] = []
        resolved.reserveCapacity(path.utf8.count + 1)
        for component in path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            if component.elementsEqual(".".utf8) { continue }
            if component.elementsEqual("..".utf8) {
                resolved.removeSubrange((resolved.lastIndex(of: UInt8(ascii: "/")) ?? 0)...)
                continue
            }
            resolved.append(UInt8(ascii: "/"))
            resolved.append(contentsOf: component)
            if isSymbolicLink(&resolved) { return (path as NSString).standardizingPath }
        }
        if resolved.isEmpty { return "/" }
        let standard = String(decoding: resolved, as: UTF8.self)
        if standard.hasPrefix("/private") || standard.hasPrefix("/var/automount") { return (path as NSString).standardizingPath }
        return standard
    }

    /// Whether the path in `bytes` names a symbolic link (one that can be read).
    private static func isSymbolicLink(_ bytes: inout [UInt8]) -> Bool {
        bytes.append(0)
        defer { bytes.removeLast() }
        var byte: CChar = 0
        return bytes.withUnsafeBufferPointer { path in
            path.withMemoryRebound(to: CChar.self) { readlink($0.baseAddress!, &byte, 1) >= 0 }
        }
    }
}
