import Yams

/// Turns a Yams/libyaml error into a located diagnostic, keeping libyaml's own position and wording.
enum YAMLErrorDiagnostic {
    static func make(_ error: Error, file: String) -> Diagnostic {
        guard let yamlError = error as? YamlError else {
            return Diagnostic(.error, code: "yaml-syntax", "\(error)", at: SourceLocation(file: file, line: 1, column: 1))
        }
        switch yamlError {
        case .scanner(let context, let problem, let mark, _),
             .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            var message = problem
            if let context { message = "\(problem) (\(context.text) at line \(context.mark.line), column \(context.mark.column))" }
            return Diagnostic(.error, code: "yaml-syntax", message, at: SourceLocation(file: file, line: mark.line, column: mark.column))
        case .reader(let problem, _, _, _):
            return Diagnostic(.error, code: "yaml-syntax", problem, at: SourceLocation(file: file, line: 1, column: 1))
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.map { "'\($0)'" }.joined(separator: ", ")
            return Diagnostic(.error, code: "duplicate-key", "duplicate key \(keys) in a mapping",
                              at: SourceLocation(file: file, line: context.mark.line, column: context.mark.column),
                              hint: "each key may appear once; merge the two entries")
        default:
            return Diagnostic(.error, code: "yaml-syntax", "\(yamlError)", at: SourceLocation(file: file, line: 1, column: 1))
        }
    }
}
