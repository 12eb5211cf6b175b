import Foundation

extension LoadedConfig {
    /// Reads every `from:` data file to its end and adds a diagnostic for each record that makes no
    /// job, at its place in the file (`titles.csv:1234:7`), at most `limit` per file, then one more
    /// saying how many were left out. What `validate` does; `run` checks each record as it goes.
    /// Returns the number of records read.
    @discardableResult
    public mutating func checkDataFiles(limit: Int = 100) -> Int {
        var total = 0
        var added: [Diagnostic] = []
        // A fan-out's records exist only once its job has run.
        for entry in dataFileJobs where entry.forEach == nil {
            var problems = 0
            do {
                let iterator = try entry.makeIterator(remembersLines: true)
                while let item = try iterator.next() {
                    total += 1
                    guard case .invalid(_, let problem) = item else { continue }
                    problems += 1
                    if problems <= limit { added.append(problem.diagnostic) }
                }
            } catch {
                added.append(Diagnostic(.error, code: "unreadable-data-file", error.message, at: entry.source))
            }
            if problems > limit {
                added.append(Diagnostic(.error, code: "more-record-problems",
                                        "the data file '\(entry.file.displayPath)' has \(problems - limit) more records that make no job (the first \(limit) are shown)",
                                        at: entry.source))
            }
        }
        diagnostics += added
        return total
    }
}
