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

    /// Texts bound in place (SQLITE_STATIC) from one buffer that lives for `withTextBuffer`'s call:
    /// SQLite reads them there instead of copying each into an allocation of its own (a stored
    /// response's seven texts, a job result's five). The statement must not be stepped after the
    /// call: `withTextBuffer` clears its bindings.
    struct TextBuffer {
        fileprivate let bytes: UnsafeMutableBufferPointer<UInt8>
        fileprivate let statement: OpaquePointer
        fileprivate var offset = 0

        /// Copies `text` into the buffer and binds it at `index`; NULL for nil.
        mutating func bind(_ text: String?, at index: Int32) {
            guard let text else {
                sqlite3_bind_null(statement, index)
                return
            }
            bind(count: text.utf8.count, at: index) { UTF8Text.copy(text, into: $0, at: 0) }
        }

        /// Binds as text the `count` bytes `write` puts at the start of the buffer it is given (a
        /// digest's hex, written in place).
        mutating func bind(count: Int, at index: Int32, _ write: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
            precondition(offset + count <= bytes.count, "a text buffer smaller than its texts")
            write(UnsafeMutableBufferPointer(rebasing: bytes[offset..<(offset + count)]))
            // Never a NULL address, even for "" (a NULL pointer binds SQL NULL): the buffer has a byte more.
            sqlite3_bind_text(statement, index, UnsafeRawPointer(bytes.baseAddress! + offset).assumingMemoryBound(to: CChar.self),
                              Int32(count), nil)
            offset += count
        }
    }

    /// Calls `body` with a `TextBuffer` of `capacity` bytes (the texts' UTF-8 lengths together)
    /// for `statement`, on the stack when it is small; clears the statement's bindings after.
    static func withTextBuffer<T>(capacity: Int, for statement: OpaquePointer, _ body: (inout TextBuffer) throws -> T) rethrows -> T {
        defer { sqlite3_clear_bindings(statement) }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity + 1) { bytes in
            var texts = TextBuffer(bytes: bytes, statement: statement)
            return try body(&texts)
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
