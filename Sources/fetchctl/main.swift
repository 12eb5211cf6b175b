import FetchKit
import FetchctlCommands
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
// Not for the commands that send nothing and must start fast (`validate`, `--version`): the loops'
// threads and first lookups were about a tenth of a `validate`'s CPU; their tasks take the runtime's pool.
let sendsNothing = CommandLine.arguments.count > 1 && ["validate", "--version"].contains(CommandLine.arguments[1])
// The same for the initialized data, for the commands whose threads would take those copies' TLB
// shootdowns (CMalloc.h).
if !sendsNothing { _ = fk_prefault_initialized_data() }
if #available(macOS 14, *), !sendsNothing { EventLoopExecutor.installAsGlobalExecutor() }

await CommandLineEntry.run()
