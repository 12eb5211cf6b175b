#include "CExecutorHook.h"

// Declared by the Swift runtime (libswift_Concurrency) as a function pointer; only its address is used.
extern void *swift_task_enqueueGlobal_hook;

void **fk_swift_task_enqueueGlobal_hook_address(void) {
    return &swift_task_enqueueGlobal_hook;
}
