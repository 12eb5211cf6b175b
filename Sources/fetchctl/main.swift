import ArgumentParser
import FetchKit
import CMalloc

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
// that). Such a command line (`run FILE` without --help, --version or the like) is parsed by `run`
// itself, as the root, named `fetchctl run` (`RunCommand.parsedAsRoot`): the whole tree's
// parse made ArgumentParser parse the arguments twice more, looking for a completion-script
// request, and reflect every command's options on the way (23 of a one-job run's 87 million
// instructions, on the path to its first request).
if RunCommand.prefetch != nil {
    RunCommand.parsedAsRoot = true
    await runRootCommand(RunCommand.self, arguments: Array(CommandLine.arguments.dropFirst(2)))
} else {
    await runRootCommand(Fetchctl.self)
}
