#ifndef CEXECUTORHOOK_H
#define CEXECUTORHOOK_H

/// The address of the Swift runtime's `swift_task_enqueueGlobal_hook`: when set, the runtime calls it
/// instead of handing a task's job to its own global thread pool.
///
/// Swift cannot name a C global of the runtime, and SwiftNIO's own installer looks the symbol up with
/// `dlsym`, which finds nothing in a binary linked with `--static-swift-stdlib` (the symbol is linked in
/// but not exported). Taking its address here resolves it at link time, static or dynamic.
void **fk_swift_task_enqueueGlobal_hook_address(void);

#endif
