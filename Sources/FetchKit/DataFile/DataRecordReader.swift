import CSV
import Foundation

/// Reads a `DataFile` one record at a time: memory stays flat however long the file is.
///
/// CSV and TSV go through CSV.swift (RFC 4180: quoted fields with delimiters, quotes and line breaks);
/// JSON Lines and text files are read a line at a time. Every format may be gzip-compressed.
public final class DataRecordReader {
    public let file: DataFile
    /// The header's column names (CSV, TSV); `["line"]` for text; nil for JSON Lines, whose records
    /// name their own keys.
    public private(set) var columns: [String]?
    /// CSV and TSV: the header, shared by every record read.
    private(set) var header: CSVHeader?

    private let source: GzipFile
    private var csv: CSVReader?
    /// CSV.swift's input: a read error ends its rows as if the file ended, so it is asked after the last one.
    private var csvInput: GzipInputStream?
    private var lines: LineReader?
    /// The line the next record starts on (CSV, TSV).
    private var nextLine = 1
    private var number = 0

    public init(_ file: DataFile) throws(DataFileError) {
        self.file = file
        source = try GzipFile(path: file.path, displayPath: file.displayPath)
        switch file.format {
        case .csv, .tsv:
            let reader: CSVReader
            let stream = GzipInputStream(source)
            do {
                reader = try CSVReader(stream: stream, hasHeaderRow: true, delimiter: file.format == .tsv ? "\t" : ",")
            } catch {
                // A corrupt gzip stream reads as an empty file: say what it was.
                if let failure = stream.streamError as? DataFileError { throw failure }
                throw DataFileError(message: "the data file '\(file.displayPath)' has no header row (the first line names the columns)")
            }
            if let error = reader.error { throw Self.failure(error, file: file, line: 1) }
            csvInput = stream
            var header = reader.headerRow ?? []
            if let first = header.first, first.hasPrefix("\u{FEFF}") { header[0] = String(first.dropFirst()) }
            let names = header.map { $0.trimmingCharacters(in: .whitespaces) }
            columns = names
            self.header = CSVHeader(columns: names, delimiter: file.format == .tsv ? "\t" : ",")
            nextLine = 2 + Self.lineBreaks(in: header)
            csv = reader
        case .jsonl, .txt:
            lines = LineReader(source)
            columns = file.format == .txt ? ["line"] : nil
        }
    }

    /// The next record, a problem with one (the record is skipped), or nil at the end. Throws when
    /// the file can't be read on (a read error, a corrupt gzip stream).
    public func next() throws(DataFileError) -> Result<DataRecord, DataFileProblem>? {
        switch file.format {
        case .csv, .tsv: return try nextRow()
        case .jsonl, .txt: return try nextTextRecord()
        }
    }

    // MARK: - CSV and TSV

    private func nextRow() throws(DataFileError) -> Result<DataRecord, DataFileProblem>? {
        guard let csv, let header else { return nil }
        let columns = header.columns
        while true {
            guard let row = csv.next() else {
                if let error = csv.error { throw Self.failure(error, file: file, line: nextLine) }
                if let failure = csvInput?.streamError as? DataFileError { throw failure }
                return nil
            }
            let line = nextLine
            // A decoding error ends the row where it happened: the row is not given out whole.
            if let error = csv.error { throw Self.failure(error, file: file, line: line) }
            nextLine = line + 1 + Self.lineBreaks(in: row)
            if row.count == 1, row[0].isEmpty { continue }  // a blank line
            number += 1
            if row.count > columns.count {
                let column = Self.columns(of: row, delimiter: header.delimiter, startLine: line)[columns.count]
                return .failure(DataFileProblem(line: column.line, column: column.column,
                                                message: "the record has \(row.count) fields; the header names \(columns.count)"))
            }
            return .success(DataRecord(number: number, line: line, row: CSVRow(fields: row, header: header)))
        }
    }

    /// What CSV.swift's error means, with the line the reader was at.
    static func failure(_ error: Error, file: DataFile, line: Int) -> DataFileError {
        if case CSVError.streamErrorHasOccurred(let underlying) = error, let failure = underlying as? DataFileError { return failure }
        if case CSVError.unicodeDecoding = error {
            return DataFileError(message: "the data file '\(file.displayPath)' is not UTF-8 text (at line \(line)); save it as UTF-8")
        }
        return DataFileError(message: "cannot read the data file '\(file.displayPath)' (at line \(line)): \(error)")
    }

    /// Line breaks inside the fields of a row (quoted ones): CRLF counts once.
    static func lineBreaks(in row: [String]) -> Int {
        var count = 0
        // Most fields hold no line break: a byte scan says so without decoding them.
        for field in row where field.utf8.contains(where: { $0 == 10 || $0 == 13 }) {
            var previous: Unicode.Scalar = " "
            for scalar in field.unicodeScalars {
                if scalar == "\n" { if previous != "\r" { count += 1 } } else if scalar == "\r" { count += 1 }
                previous = scalar
            }
        }
        return count
    }

    /// Where each field of a row starts. The reader does not say which fields were quoted: a field
    /// is taken to be quoted when it must be (it holds the delimiter, a quote or a line break).
    static func columns(of row: [String], delimiter: Unicode.Scalar, startLine: Int) -> [(line: Int, column: Int)] {
        var line = startLine
        var column = 1
        var starts: [(line: Int, column: Int)] = []
        starts.reserveCapacity(row.count)
        for field in row {
            starts.append((line, column))
            let quoted = field.unicodeScalars.contains { $0 == delimiter || $0 == "\"" || $0 == "\n" || $0 == "\r" }
            if quoted { column += 1 }
            var previous: Unicode.Scalar = " "
            for scalar in field.unicodeScalars {
                switch scalar {
                case "\n":
                    if previous != "\r" { line += 1 }
                    column = 1
                case "\r":
                    line += 1
                    column = 1
                case "\"":
                    column += 2
                default:
                    column += 1
                }
                previous = scalar
            }
            column += quoted ? 2 : 1
        }
        return starts
    }

    // MARK: - JSON Lines and text

    private func nextTextRecord() throws(DataFileError) -> Result<DataRecord, DataFileProblem>? {
        guard let lines else { return nil }
        while let (bytes, line) = try lines.next() {
            var text = bytes
            if line == 1, text.starts(with: [0xEF, 0xBB, 0xBF]) { text.removeFirst(3) }
            if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            number += 1
            if file.format == .txt {
                if text.last == 0x0D { text.removeLast() }
                return .success(DataRecord(number: number, line: line, values: ["line": .string(String(decoding: text, as: UTF8.self))],
                                           positions: ["line": (line, 1)]))
            }
            return jsonRecord(text, line: line)
        }
        return nil
    }

    private func jsonRecord(_ bytes: [UInt8], line: Int) -> Result<DataRecord, DataFileProblem> {
        let decoded: JSONRecordValue
        do {
            decoded = try JSONDecoder().decode(JSONRecordValue.self, from: Data(bytes))
        } catch {
            return .failure(DataFileProblem(line: line, column: 1, message: "the line is not JSON"))
        }
        guard case .object(let entries) = decoded.value else {
            return .failure(DataFileProblem(line: line, column: 1, message: "the line is JSON but not an object ({\"key\": value, …})"))
        }
        var values: [String: ParameterValue] = [:]
        var positions: [String: (line: Int, column: Int)] = [:]
        values.reserveCapacity(entries.count)
        let text = String(decoding: bytes, as: UTF8.self)
        // Members of nested objects by their dotted paths too: {{row.owner.login}}.
        func flatten(_ prefix: String, _ value: ParameterValue, depth: Int) {
            guard depth < 8, case .object(let members) = value else { return }
            for member in members {
                let key = prefix + "." + member.key
                if values[key] == nil { values[key] = member.value }
                flatten(key, member.value, depth: depth + 1)
            }
        }
        for entry in entries {
            values[entry.key] = entry.value
            flatten(entry.key, entry.value, depth: 0)
            // Where the key is written: its first quoted occurrence (a column in Unicode scalars).
            if let range = text.range(of: "\"\(entry.key)\"") {
                positions[entry.key] = (line, text.unicodeScalars.distance(from: text.unicodeScalars.startIndex, to: range.lowerBound) + 1)
            }
        }
        return .success(DataRecord(number: number, line: line, values: values, positions: positions))
    }

    // MARK: - Counting

    /// The number of records, without reading them: lines that are not blank (JSON Lines, text), or
    /// rows after the header (CSV, TSV: a line break inside a quoted field does not end a row; the
    /// rule CSV.swift reads by, that a quote opens a quoted field only as its first character).
    /// What the run announces as its job count and the progress display counts down from.
    public static func count(_ file: DataFile) throws(DataFileError) -> Int {
        let source = try GzipFile(path: file.path, displayPath: file.displayPath)
        var counter = RecordCounter(quoting: file.format == .csv || file.format == .tsv,
                                    delimiter: file.format == .tsv ? UInt8(ascii: "\t") : UInt8(ascii: ","))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let got = try source.read(into: buffer.baseAddress!, count: buffer.count)
            if got == 0 { break }
            counter.scan(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
        }
        let records = counter.finish()
        return counter.quoting ? max(0, records - 1) : records
    }
}

/// Counts records in bytes (see `DataRecordReader.count`), across chunk boundaries.
struct RecordCounter {
    let quoting: Bool
    let delimiter: UInt8
    private var records = 0
    private var hasContent = false
    private var atFieldStart = true
    private var inQuotes = false
    private var quoteSeen = false
    private var afterCR = false

    init(quoting: Bool, delimiter: UInt8) {
        self.quoting = quoting
        self.delimiter = delimiter
    }

    mutating func scan(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes {
            if inQuotes {
                if quoteSeen {
                    quoteSeen = false
                    if byte == UInt8(ascii: "\"") { continue }  // an escaped quote
                    if byte == delimiter {
                        inQuotes = false
                        atFieldStart = true
                        continue
                    }
                    if byte == 0x0A || byte == 0x0D {
                        inQuotes = false
                        endRecord(byte)
                        continue
                    }
                    continue
                }
                if byte == UInt8(ascii: "\"") { quoteSeen = true }
                continue
            }
            if byte == 0x0A || (byte == 0x0D && quoting) {
                endRecord(byte)
                continue
            }
            afterCR = false
            if !quoting {
                // Text formats: a line of spaces, tabs and a carriage return is blank.
                if byte != 0x20, byte != 0x09, byte != 0x0D { hasContent = true }
                continue
            }
            if byte == UInt8(ascii: "\""), atFieldStart { inQuotes = true }
            atFieldStart = byte == delimiter
            hasContent = true
        }
    }

    private mutating func endRecord(_ byte: UInt8) {
        if byte == 0x0A, afterCR {
            afterCR = false
            return
        }
        afterCR = byte == 0x0D
        if hasContent { records += 1 }
        hasContent = false
        atFieldStart = true
    }

    mutating func finish() -> Int {
        if hasContent || inQuotes { records += 1 }
        hasContent = false
        return records
    }
}

/// Lines from a `GzipFile`, each with its 1-based number, without the line feed.
final class LineReader {
    private let source: GzipFile
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    private var line = 0

    init(_ source: GzipFile) { self.source = source }

    func next() throws(DataFileError) -> ([UInt8], Int)? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                let bytes = Array(buffer[start..<newline])
                start = newline + 1
                line += 1
                return (bytes, line)
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                let bytes = Array(buffer[start...])
                start = buffer.count
                line += 1
                return (bytes, line)
            }
            buffer.removeFirst(start)
            start = 0
            let old = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: 256 * 1024))
            var failure: DataFileError?
            let got = buffer.withUnsafeMutableBytes { raw -> Int in
                do { return try source.read(into: raw.baseAddress! + old, count: 256 * 1024) } catch {
                    failure = error as? DataFileError ?? DataFileError(message: "\(error)")
                    return 0
                }
            }
            if let failure { throw failure }
            buffer.removeLast(256 * 1024 - got)
            if got == 0 { atEnd = true }
        }
    }
}

/// A JSON value decoded with its types kept: `true` is a boolean, not the number 1; object keys are
/// sorted (JSON objects have no order a decoder keeps).
struct JSONRecordValue: Decodable {
    var value: ParameterValue

    init(from decoder: Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [ParameterValue] = []
            while !array.isAtEnd { items.append(try array.decode(JSONRecordValue.self).value) }
            value = .array(items)
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            value = .object(try object.allKeys.sorted { $0.stringValue < $1.stringValue }.map {
                ParameterEntry(key: $0.stringValue, value: try object.decode(JSONRecordValue.self, forKey: $0).value)
            })
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            value = .null
        } else if let bool = try? single.decode(Bool.self) {
            value = .bool(bool)
        } else if let int = try? single.decode(Int.self) {
            value = .int(int)
        } else if let double = try? single.decode(Double.self) {
            value = .double(double)
        } else {
            value = .string(try single.decode(String.self))
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
