#include "CMalloc.h"
#include <stdint.h>
#include <stdlib.h>  // defines __GLIBC__ on glibc
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
// Defined by the linker (GNU ld, gold, lld): the start of `.bss` and the end of the program's data.
extern char __bss_start[], _end[];
#endif

int fk_malloc_set_top_pad(int bytes) {
#if defined(__GLIBC__)
    return mallopt(M_TOP_PAD, bytes);
#else
    (void)bytes;
    return 0;
#endif
}

int fk_prefault_zero_data(void) {
#if defined(__linux__)
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    // The page holding `__bss_start` may also hold the end of `.data`: populating it for writing
    // copies it, as its first write would have.
    uintptr_t start = (uintptr_t)__bss_start & ~(page - 1);
    uintptr_t end = ((uintptr_t)_end + page - 1) & ~(page - 1);
    return madvise((void *)start, end - start, MADV_POPULATE_WRITE);
#else
    return -1;
#endif
}
