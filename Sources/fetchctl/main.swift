import ArgumentParser
import FetchKit
import CMalloc

// The heap grows 16 MiB at a time instead of 128 KiB: each event loop's malloc arena grew in
// 128 KiB steps, one `mprotect` each, 1,100 of them in a 2,000-job run (29 with this). Only address
// space is reserved; pages count toward RSS once touched, as before (peak RSS unchanged).
_ = fk_malloc_set_top_pad(16 << 20)

// Before any task starts: tasks run on the HTTP client's event loops (see EventLoopExecutor).
if #available(macOS 14, *) { EventLoopExecutor.installAsGlobalExecutor() }

/// `Fetchctl.main()` written here would pick ParsableCommand's synchronous overload, which never
/// runs an async subcommand; going through the protocol picks AsyncParsableCommand's.
func runRootCommand<Command: AsyncParsableCommand>(_: Command.Type) async {
    await Command.main(nil)
}

await runRootCommand(Fetchctl.self)
