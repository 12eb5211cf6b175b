import Foundation
import GRDB
import GRDBSQLite
import CSQLiteConfig

/// The few pieces of SQLite's C API the hot paths use on statements GRDB prepared (or on its
/// connection): binding and reading values without `StatementArguments` boxing each one and
/// without a `Row` per result. GRDB still owns the connection and the transactions.
enum SQLiteC {
    /// A GRDB configuration for a store of this process, SQLite's process-wide settings made first.
    ///
    /// Those settings: no memory statistics. SQLite counts every allocation under a global mutex
    /// by default (Debian's build also has no lookaside, so every small allocation is a `malloc`):
    /// 26 of the 28 mutex locks a job's two rows took. Nothing here reads the statistics
    /// (`sqlite3_memory_used`). The setting must come before SQLite's first use, so every store
    /// gets its configuration here.
    ///
    /// And on every connection, `secure_delete` off, SQLite's own default: Debian builds SQLite
    /// with it on, which zeroes the space every moved or deleted cell leaves (500 of the 16,600
    /// instructions of inserting a response's index row, in a C program with the index's schema).
    /// It guards deleted content from being read back out of the file; these stores never hold a
    /// secret to guard (URLs are redacted, `Authorization` and cookies are never stored, `Vary`
    /// values are digests).
    static func configuration() -> Configuration {
        _ = processSettings
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA secure_delete = OFF") }
        return configuration
    }

    private static let processSettings: Int32 = fk_sqlite_memory_statistics_off()

    /// SQLite copies the text (SQLITE_TRANSIENT): the string's storage only lives for the call.
    static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    static func bind(_ text: String?, to statement: OpaquePointer, at index: Int32) {
        guard var text else {
            sqlite3_bind_null(statement, index)
            return
        }
        text.withUTF8 { bytes in
            _ = bytes.withMemoryRebound(to: CChar.self) { sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), transient) }
        }
    }

    /// Binds `text` in place (SQLITE_STATIC: SQLite reads the string's own bytes, copying
    /// nothing) and calls `body` while it is bound; NULL for nil. Nest calls to bind several: a
    /// stored response's six texts were gathered into one buffer (two allocations and a copy of
    /// every byte a row). The binding must not be stepped after `body` returns: rebind or clear.
    @inline(__always)
    static func withText<T>(_ text: String?, boundTo statement: OpaquePointer, at index: Int32, _ body: () throws -> T) rethrows -> T {
        guard let text else {
            sqlite3_bind_null(statement, index)
            return try body()
        }
        let bound = try text.utf8.withContiguousStorageIfAvailable { bytes -> T in
            // An empty buffer may have no address, and a NULL pointer binds SQL NULL: "" is bound as such.
            let start = bytes.baseAddress.map { UnsafeRawPointer($0) } ?? UnsafeRawPointer(emptyText)
            sqlite3_bind_text(statement, index, start.assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil)
            return try body()
        }
        if let bound { return bound }
        bind(text, to: statement, at: index)  // not contiguous (bridged): SQLite copies it
        return try body()
    }

    /// A NUL byte that is never freed or written after it is made: the address an empty text is bound at.
    nonisolated(unsafe) private static let emptyText: UnsafeMutablePointer<UInt8> = {
        let byte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        byte.initialize(to: 0)
        return byte
    }()

    /// Binds UTF-8 `bytes` as text, copied by SQLite: for bytes that don't outlive the call.
    static func bindTransient(_ bytes: UnsafeBufferPointer<UInt8>, to statement: OpaquePointer, at index: Int32) {
        _ = bytes.withMemoryRebound(to: CChar.self) { sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), transient) }
    }

    /// Binds `texts` to parameters `first`, `first + 1`, … and calls `body` while they are bound:
    /// the texts are gathered into one buffer that lives for the call, and SQLite reads them in
    /// place (SQLITE_STATIC) instead of copying each into an allocation of its own (a cold run's
    /// stores made seven a row). The statement's bindings are cleared before it returns.
    static func withTexts<T>(_ texts: [String?], boundTo statement: OpaquePointer, from first: Int32,
                             _ body: () throws -> T) rethrows -> T {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(texts.reduce(0) { $0 + ($1?.utf8.count ?? 0) } + 1)
        for case let text? in texts { UTF8Text.append(text, to: &bytes) }
        defer { sqlite3_clear_bindings(statement) }
        return try bytes.withUnsafeBufferPointer { buffer in
            // Never NULL, even for empty texts (a NULL pointer would bind SQL NULL): capacity ≥ 1.
            var next = UnsafeRawPointer(buffer.baseAddress!)
            for (offset, text) in texts.enumerated() {
                let index = first + Int32(offset)
                guard let text else {
                    sqlite3_bind_null(statement, index)
                    continue
                }
                let count = text.utf8.count
                sqlite3_bind_text(statement, index, next.assumingMemoryBound(to: CChar.self), Int32(count), nil)
                next += count
            }
            return try body()
        }
    }

    static func bind(_ value: Int64?, to statement: OpaquePointer, at index: Int32) {
        if let value { sqlite3_bind_int64(statement, index, value) } else { sqlite3_bind_null(statement, index) }
    }

    static func bind(_ value: Double?, to statement: OpaquePointer, at index: Int32) {
        if let value { sqlite3_bind_double(statement, index, value) } else { sqlite3_bind_null(statement, index) }
    }

    /// A text column; nil when NULL or not text (a damaged row reads as missing values, not as
    /// SQLite's conversions of them).
    static func text(_ statement: OpaquePointer, _ column: Int32) -> String? {
        guard sqlite3_column_type(statement, column) == SQLITE_TEXT, let bytes = sqlite3_column_text(statement, column) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
    }

    /// An integer column; nil when NULL or not an integer.
    static func int64(_ statement: OpaquePointer, _ column: Int32) -> Int64? {
        sqlite3_column_type(statement, column) == SQLITE_INTEGER ? sqlite3_column_int64(statement, column) : nil
    }

    /// A real (or integer) column; nil when NULL or neither.
    static func double(_ statement: OpaquePointer, _ column: Int32) -> Double? {
        let type = sqlite3_column_type(statement, column)
        return type == SQLITE_FLOAT || type == SQLITE_INTEGER ? sqlite3_column_double(statement, column) : nil
    }

    /// Steps a statement that returns no rows; throws GRDB's error for anything but SQLITE_DONE.
    static func run(_ statement: OpaquePointer, in db: Database, _ what: String) throws {
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE else { throw failure(code, in: db, what) }
    }

    static func failure(_ code: Int32, in db: Database, _ what: String) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: what)
    }
}
