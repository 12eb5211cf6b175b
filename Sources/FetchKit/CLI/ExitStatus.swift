/// fetchctl's exit codes (SPEC §3); cron jobs and CI rely on them.
public enum ExitStatus: Int32, Sendable {
    /// Every job succeeded or was up to date; a config with no errors.
    case success = 0
    /// One or more jobs failed.
    case jobsFailed = 1
    /// A config is invalid or unreadable.
    case invalidConfig = 2
    /// Bad command line (sysexits' EX_USAGE).
    case usage = 64
    /// Try again later (EX_TEMPFAIL): another run holds the state directory's lock, or the network
    /// stayed down past `network.max_wait`.
    case locked = 75
    case interrupted = 130
    case terminated = 143
}

/// Parses `--param name=value`: the value is text, converted to the param's type when bound
/// (JSON text for array and object params).
public enum ParamArgument {
    public static func parse(_ argument: String) -> (name: String, value: ParameterValue)? {
        guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else { return nil }
        return (String(argument[..<equals]), .string(String(argument[argument.index(after: equals)...])))
    }
}
