import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Keeps what a job writes inside `output_dir` at run time, after interpolation *and* symlink
/// resolution: the plan checks paths as text (`path-escapes-output`), but a directory on the way
/// may be a symbolic link to elsewhere (`out/reports -> /etc`). Before a job opens its file, the
/// deepest part of its destination's directory that exists is resolved (`realpath`) and must lie
/// under the resolved output directory; otherwise the job fails with `path_escape` and nothing is
/// written. Verdicts are kept per directory for the run (thousands of saves into one directory
/// resolve it once), so a link made in the middle of a run in a directory already checked is not
/// seen until the next run.
final class OutputGuard: Sendable {
    let root: String
    /// `root` ending in one `/`: what a path inside it starts with.
    private let rootPrefix: String
    private let verdicts = LockedBox(Verdicts())

    /// What the run learned of its directories (under the lock).
    private struct Verdicts {
        var byDirectory: [String: FetchError?] = [:]
        /// The directory of the last path found inside: a batch saves into a few directories, and
        /// comparing its bytes spares hashing the directory and copying a verdict for each job.
        var lastInside = ""
    }

    /// Directories whose verdict is kept; past it, the verdicts start over.
    static let keptVerdicts = 10_000

    init(outputDir: String) {
        // Lexically: Foundation's `standardizingPath` may follow links, which is what this checks.
        root = JobExpander.normalize(outputDir)
        rootPrefix = root.hasSuffix("/") ? root : root + "/"
    }

    /// Throws `path_escape` when `destination` is, or resolves to, a place outside the output directory.
    func check(_ destination: String) throws {
        // The plan's paths are normalized already (checked as text there): only others are normalized here.
        // A byte scan: Foundation's `contains("/.")` cost 8,000 instructions a job (callgrind).
        let dotSegment = UTF8Text.contains(UInt8(ascii: "/"), followedBy: UInt8(ascii: "."), in: destination)
        let lexical = dotSegment ? JobExpander.normalize(destination) : destination
        // As bytes: a path is bytes to the file system (String's `hasPrefix` would also take a
        // canonically equivalent spelling of the root, which is another directory).
        guard UTF8Text.prefix(of: lexical, count: rootPrefix.utf8.count, equals: rootPrefix), lexical != root else {
            throw FetchError(.pathEscape, "'\(destination)' is outside output_dir '\(root)'; nothing was written")
        }
        let slash = UTF8Text.lastOffset(of: UInt8(ascii: "/"), in: lexical) ?? 0
        if slash > 0, verdicts.withLock({ UTF8Text.prefix(of: lexical, count: slash, equals: $0.lastInside) }) { return }
        let directory = String(Substring(lexical.utf8.prefix(slash)))
        let known = verdicts.withLock { $0.byDirectory[directory] }
        let verdict = known ?? verdict(for: directory)
        verdicts.withLock {
            if known == nil {
                // A million jobs each in a directory of its own must not keep a million verdicts.
                if $0.byDirectory.count >= Self.keptVerdicts { $0.byDirectory.removeAll(keepingCapacity: true) }
                $0.byDirectory[directory] = verdict
            }
            if verdict == nil { $0.lastInside = directory }
        }
        if var verdict {
            verdict.message = "'\(destination)' " + verdict.message
            throw verdict
        }
    }

    /// nil when `directory` (under the root as text) stays under it once links are followed.
    private func verdict(for directory: String) -> FetchError? {
        guard let resolvedRoot = Self.resolve(root) else { return nil }  // nothing made yet: nothing linked
        var existing = directory
        var rest: [String] = []
        while Self.resolve(existing) == nil, existing != root, existing != "/", !existing.isEmpty {
            rest.insert((existing as NSString).lastPathComponent, at: 0)
            existing = (existing as NSString).deletingLastPathComponent
        }
        guard let resolved = Self.resolve(existing) else { return nil }
        let target = ([resolved] + rest).joined(separator: "/")
        if Self.isInside(target, resolvedRoot) { return nil }
        return FetchError(.pathEscape, "leads outside output_dir through a symbolic link ('\(existing)' is '\(resolved)'); nothing was written")
    }

    static func isInside(_ path: String, _ root: String) -> Bool {
        path == root || path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }

    static func resolve(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
