import Foundation

/// A data file that jobs come from (`from: {file: titles.csv}`): one job per record, read as the
/// jobs are made, never the whole file at once.
///
/// - `.csv` / `.tsv`: a header row names the columns, `{{row.<column>}}`; RFC 4180 quoting (fields
///   with commas, quotes and line breaks), read by CSV.swift.
/// - `.jsonl` (`.ndjson`): one JSON object per line, `{{row.<key>}}` (nested values as JSON text).
/// - `.txt`: one value per line, `{{row.line}}`.
/// - Any of them compressed with gzip: `titles.csv.gz`.
///
/// Blank lines are skipped in every format. The record number (`{{row.number}}`, from 1) counts
/// records, not lines.
public struct DataFile: Sendable, Hashable {
    public enum Format: String, Sendable, CaseIterable {
        case csv, tsv, jsonl, txt
    }

    /// As the jobs file gives it, for messages (`titles.csv:1234:7`).
    public var displayPath: String
    /// Absolute.
    public var path: String
    public var format: Format

    public init(displayPath: String, path: String, format: Format) {
        self.displayPath = displayPath
        self.path = path
        self.format = format
    }

    /// The format a file name says (`.csv`, `.tsv`, `.jsonl`, `.ndjson`, `.txt`, each also with
    /// `.gz`), or nil.
    public static func format(ofPath path: String) -> Format? {
        var name = (path as NSString).lastPathComponent.lowercased()
        if name.hasSuffix(".gz") { name.removeLast(3) }
        switch (name as NSString).pathExtension {
        case "csv": return .csv
        case "tsv", "tab": return .tsv
        case "jsonl", "ndjson": return .jsonl
        case "txt", "text", "lst": return .txt
        default: return nil
        }
    }
}

/// One record of a data file, with where each of its values starts, for diagnostics.
public struct DataRecord: Sendable {
    /// 1-based, counting records (blank lines and the header row are not records).
    public var number: Int
    /// The line the record starts on (1-based).
    public var line: Int
    /// By name: `row.title` is `values["title"]`. CSV and text values are strings; JSON Lines
    /// values keep their JSON type. A CSV or TSV record keeps its row as read and makes this when
    /// asked: making jobs reads the row by column (`DataFileJobs`); a dictionary per record, made
    /// and then read again by name, was about 5% of a data-file job's instructions.
    public var values: [String: ParameterValue] {
        get { row?.values ?? storedValues }
        set {
            if let row { knownPositions = row.positions(startLine: line) }
            storedValues = newValue
            row = nil
        }
    }
    /// Where each value starts (line, column), when known; otherwise the record's own start.
    /// Worked out when asked (a problem's location), not for every record read.
    public var positions: [String: (line: Int, column: Int)] {
        get { row?.positions(startLine: line) ?? knownPositions }
        set {
            if let row { storedValues = row.values }
            knownPositions = newValue
            row = nil
        }
    }
    private var storedValues: [String: ParameterValue]
    private var knownPositions: [String: (line: Int, column: Int)]
    /// A CSV or TSV record's fields, with the header they were read under.
    private(set) var row: CSVRow?

    public init(number: Int, line: Int, values: [String: ParameterValue], positions: [String: (line: Int, column: Int)]) {
        self.number = number
        self.line = line
        storedValues = values
        knownPositions = positions
    }

    /// A CSV or TSV record: its values and positions are made from the row when they are asked for.
    init(number: Int, line: Int, row: CSVRow) {
        self.number = number
        self.line = line
        storedValues = [:]
        knownPositions = [:]
        self.row = row
    }

    public func position(of name: String) -> (line: Int, column: Int) {
        positions[name] ?? (line, 1)
    }
}

/// A CSV or TSV file's header, made once and shared by its records.
final class CSVHeader: Sendable {
    /// The column names, trimmed, in order (a name may repeat).
    let columns: [String]
    /// Each distinct name's first column: a repeated name's later columns are not read.
    let firstIndex: [String: Int]
    let delimiter: Unicode.Scalar

    init(columns: [String], delimiter: Unicode.Scalar) {
        self.columns = columns
        self.delimiter = delimiter
        var first: [String: Int] = [:]
        for (index, name) in columns.enumerated() where first[name] == nil { first[name] = index }
        firstIndex = first
    }
}

/// One CSV or TSV row as read: fields in column order (a short row has fewer than the header names).
struct CSVRow: Sendable {
    let fields: [String]
    let header: CSVHeader

    /// The value of each named column the row has (the first of a repeated name).
    var values: [String: ParameterValue] {
        var values: [String: ParameterValue] = [:]
        values.reserveCapacity(fields.count)
        for (name, index) in header.firstIndex where index < fields.count { values[name] = .string(fields[index]) }
        return values
    }

    func positions(startLine: Int) -> [String: (line: Int, column: Int)] {
        let starts = DataRecordReader.columns(of: fields, delimiter: header.delimiter, startLine: startLine)
        var positions: [String: (line: Int, column: Int)] = [:]
        for (name, index) in header.firstIndex where index < fields.count { positions[name] = starts[index] }
        return positions
    }
}

/// A record that can't be read (a JSON Lines line that is not an object, a CSV row with more fields
/// than the header names), reported at its place and skipped.
public struct DataFileProblem: Error, Sendable {
    public var line: Int
    public var column: Int
    public var message: String
}

/// The data file can't be opened or read at all.
public struct DataFileError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
