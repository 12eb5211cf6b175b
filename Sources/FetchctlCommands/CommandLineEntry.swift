import Foundation
import ArgumentParser
import FetchKit

/// What the `fetchctl` executable runs, once its process is set up (Sources/fetchctl/main.swift).
/// The commands live in this library rather than in the executable so the tests can import them
/// without linking the executable's release link flags (a static Swift runtime) into the test binary.
public enum CommandLineEntry {
    /// Parses `CommandLine.arguments` and runs the command they name; a failed `run` exits with its status.
    ///
    /// `fetchctl run JOBS …`: the jobs file starts loading on the other core before the command line is
    /// parsed (`RunCommand.prefetch`, made here; the run uses it only if the parsed options ask for just
    /// that; none is begun after `--dry-run`, `--state-dir` or `--shard`). Such a command line (`run FILE`
    /// without --help, --version or the like) is read without ArgumentParser when `RunOptions` knows
    /// every argument in it and its values are valid (ArgumentParser's parse was 17 to 18 million of a
    /// one-job run's instructions, on the path to its first request); otherwise it is parsed by `run`
    /// itself, as the root, named `fetchctl run` (`RunCommand.parsedAsRoot`), which reports every
    /// mistake as the whole tree's parse would, without parsing the arguments twice more looking for a
    /// completion-script request, or, with no prefetch begun, by the whole tree as any other command.
    /// `fetchctl validate FILE…` is read without ArgumentParser in the same way
    /// (`ValidateCommand.quicklyParsing`).
    public static func run() async {
        let arguments = CommandLine.arguments
        // `fetchctl --version` prints what ArgumentParser prints for it (`Fetchctl.configuration`'s
        // version and a newline), without the parse: 14 million instructions, nearly all of it.
        if arguments.count == 2, arguments[1] == "--version" {
            Output.stdout(FetchKitVersion.current + "\n")
            return
        }
        // `fetchctl validate FILE…` (CI's command): read without ArgumentParser when it can be.
        if arguments.count > 2, arguments[1] == "validate", let (files, format) = ValidateCommand.quicklyParsing(Array(arguments.dropFirst(2))) {
            let status = ValidateCommand.check(files, format: format)
            // As ArgumentParser exits for `run()`'s `ExitCode`: the status, nothing more printed.
            if status != .success { exit(status.rawValue) }
            return
        }
        let prefetch = RunCommand.prefetch
        guard prefetch != nil || (arguments.count > 2 && arguments[1] == "run") else {
            await runRootCommand(Fetchctl.self)
            return
        }
        let runArguments = Array(arguments.dropFirst(2))
        if let options = RunOptions(quicklyParsing: runArguments), let invocation = try? options.invocation(prefetch: prefetch) {
            // What ArgumentParser's `main` does with `RunCommand.run()`'s result: a failed run's status
            // is the exit code, with nothing more printed.
            let status = await invocation.perform(stdout: .standardOutput, stderr: .standardError)
            if status != .success { exit(status.rawValue) }
        } else if prefetch != nil {
            RunCommand.parsedAsRoot = true
            await runRootCommand(RunCommand.self, arguments: runArguments)
        } else {
            await runRootCommand(Fetchctl.self)
        }
    }

    /// `Fetchctl.main()` written here would pick ParsableCommand's synchronous overload, which never
    /// runs an async subcommand; going through the protocol picks AsyncParsableCommand's.
    private static func runRootCommand<Command: AsyncParsableCommand>(_: Command.Type, arguments: [String]? = nil) async {
        await Command.main(arguments)
    }
}
