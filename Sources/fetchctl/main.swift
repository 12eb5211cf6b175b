import ArgumentParser
import FetchKit

// Before any task starts: tasks run on the HTTP client's event loops (see EventLoopExecutor).
if #available(macOS 14, *) { EventLoopExecutor.installAsGlobalExecutor() }

/// `Fetchctl.main()` written here would pick ParsableCommand's synchronous overload, which never
/// runs an async subcommand; going through the protocol picks AsyncParsableCommand's.
func runRootCommand<Command: AsyncParsableCommand>(_: Command.Type) async {
    await Command.main(nil)
}

await runRootCommand(Fetchctl.self)
