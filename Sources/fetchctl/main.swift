import Foundation
import ArgumentParser
import FetchKit
import CMalloc

// The Swift runtime's caches in the binary's zero-initialized data, paged in in one call before any
// thread starts, rather than one copy-on-write fault at a time, each interrupting the other cores
// once the event loops run (CMalloc.h): a one-job run 1,196 → 951 page faults, about 0.7 ms less CPU.
_ = fk_prefault_zero_data()

// The heap grows 4 MiB at a time instead of 128 KiB: each event loop's malloc arena grew in
// 128 KiB steps, one `mprotect` each (which stalls the other threads' page faults), 1,100 of them
// in a 2,000-job run, 28 with this: 2,000 x 16 KiB 5% faster. Only address space is reserved; what
// an arena keeps free at its top after a peak raised a 100,000-job rerun's peak RSS by 2 MB (16 MiB
// was 2% faster still, for 4 MB).
_ = fk_malloc_set_top_pad(4 << 20)

// Before any task starts: tasks run on the HTTP client's event loops (see EventLoopExecutor).
if #available(macOS 14, *) { EventLoopExecutor.installAsGlobalExecutor() }

/// `Fetchctl.main()` written here would pick ParsableCommand's synchronous overload, which never
/// runs an async subcommand; going through the protocol picks AsyncParsableCommand's.
func runRootCommand<Command: AsyncParsableCommand>(_: Command.Type, arguments: [String]? = nil) async {
    await Command.main(arguments)
}

// `fetchctl run JOBS …`: the jobs file starts loading on the other core before the command line is
// parsed (`RunCommand.prefetch`, made here; the run uses it only if the parsed options ask for just
// that). Such a command line (`run FILE` without --help, --version or the like) is read without
// ArgumentParser when `RunOptions` knows every argument in it and its values are valid (17 of a
// one-job run's 76 million instructions were ArgumentParser's, on the path to its first request);
// otherwise it is parsed by `run` itself, as the root, named `fetchctl run`
// (`RunCommand.parsedAsRoot`), which reports every mistake as the whole tree's parse would, without
// parsing the arguments twice more looking for a completion-script request.
if RunCommand.prefetch != nil {
    let arguments = Array(CommandLine.arguments.dropFirst(2))
    if let options = RunOptions(quicklyParsing: arguments), let invocation = try? options.invocation(prefetch: RunCommand.prefetch) {
        // What ArgumentParser's `main` does with `RunCommand.run()`'s result: a failed run's status
        // is the exit code, with nothing more printed.
        let status = await invocation.perform(stdout: .standardOutput, stderr: .standardError)
        if status != .success { exit(status.rawValue) }
    } else {
        RunCommand.parsedAsRoot = true
        await runRootCommand(RunCommand.self, arguments: arguments)
    }
} else {
    await runRootCommand(Fetchctl.self)
}
