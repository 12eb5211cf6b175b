import CFileSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A new SQLite store written from a template: the file its schema makes, kept as a resource
/// (`Resources/state.sqlite`, `Resources/cache-index.sqlite`, embedded in the binary) and put into
/// place in one step, instead of SQLite parsing and running the schema's statements.
///
/// A run with a new state directory (a first run, each pod of a sharded batch, a CI job) made two
/// stores before its first request: 3.9 million instructions of SQLite compiling `CREATE TABLE`s,
/// a rollback journal, and three `fdatasync`s a store for it (the journal, the directory, the
/// file). From the template it is one write and one `fdatasync` a store (SQLite still syncs the
/// directory when it makes the WAL, and checkpoints at the end: a one-job run's 15 `fdatasync`s
/// are 13).
///
/// The templates are what `SchemaCreation` writes (the store's `currentSchema` and every migration
/// recorded as applied), in WAL mode. `StateStoreTests` and `CacheIndexFormatTests` check that a
/// store made from its template has the schema the migrations make; `StoreTemplateTests` writes the
/// templates anew with `FETCHCTL_WRITE_STORE_TEMPLATES=1 swift test --filter StoreTemplateTests`.
enum StoreTemplate {
    /// Writes `template` at `path` unless a file is there, and says whether it did. The file is
    /// written whole under no name (or a hidden one where the file system has no unnamed files),
    /// synced, and then linked at `path`, which is never replaced: two processes making the same
    /// store at once make it once, and a crash leaves either no file or a complete one. False,
    /// with nothing left behind, when a file is there or anything fails: the caller then opens
    /// `path` as before and SQLite makes (or migrates) the store.
    ///
    /// `unnamedFiles` false takes the hidden name where an unnamed file would do (the tests' way to
    /// that path).
    static func create(at path: String, from template: [UInt8], unnamedFiles: Bool = true) -> Bool {
        if template.isEmpty || access(path, F_OK) == 0 || errno != ENOENT { return false }
        // A WAL left from a store whose file was deleted: SQLite discards the WAL of an empty
        // database, so a store it makes itself starts clean, but would lay the old WAL's pages over
        // a template (StaleWALTests). Made with SQL then.
        if access(path + "-wal", F_OK) == 0 || errno != ENOENT { return false }
        let directory = (path as NSString).deletingLastPathComponent
        var fd: Int32 = unnamedFiles ? fk_open_unnamed(directory, 0o644) : -1
        var hidden: String?
        if fd < 0 {
            // No unnamed files here: a hidden name of this call's own (two threads of one process
            // may make the same store), linked the same way.
            let name = UTF8Text.joined(directory, "/.", (path as NSString).lastPathComponent,
                                       ".\(getpid()).\(String(UInt64.random(in: .min ... .max), radix: 16)).template")
            fd = Glibc.open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard fd >= 0 else { return false }
            hidden = name
        }
        defer {
            Glibc.close(fd)
            if let hidden { unlink(hidden) }
        }
        guard write(template, to: fd), fdatasync(fd) == 0 else { return false }
        if let hidden { return link(hidden, path) == 0 }
        return fk_link_unnamed(fd, path) == 0
    }

    /// Writes all of `bytes` to `fd`.
    private static func write(_ bytes: [UInt8], to fd: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }
}
