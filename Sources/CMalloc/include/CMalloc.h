#ifndef CMALLOC_H
#define CMALLOC_H

#include <stdint.h>

/// glibc's `mallopt(M_TOP_PAD, bytes)`: how much more than asked for the heap grows each time it
/// must. `malloc.h`, which declares it, is not part of Swift's Glibc module. Returns 1 when set.
int fk_malloc_set_top_pad(int bytes);

/// Pages in the executable's zero-initialized data (`.bss`, from the linker's `__bss_start` to
/// `_end`) at once, writable, with `madvise(MADV_POPULATE_WRITE)` (Linux 5.14; elsewhere nothing).
/// The Swift runtime's caches live there (each type's metadata, lazily made witness tables,
/// `swift_once` tokens), and each is read before it is first written: the read maps the shared zero
/// page, the write then copies it, and once the event loops run, every such copy interrupts the
/// other cores to flush their TLBs. Called first thing in `main`, before any thread starts.
/// Returns 0 when the pages were populated.
int fk_prefault_zero_data(void);

/// The same for the executable's initialized writable data (`.data`, found in its section headers,
/// read from `/proc/self/exe`: the linkers give no symbol for its end, and gold places 37 MB of
/// writable `.rodata` after it, which `_edata` would include). The runtime's caches there (the
/// type-name lookups' cache variables, Foundation's and SwiftNIO's metadata) are read-only pages of
/// the file until first written, and each first write copies its page: after the event loops
/// start, with a TLB shootdown on the other core. Nothing for a `.data` above 8 MiB (each page is
/// copied, written later or not). Returns 0 when the pages were populated.
int fk_prefault_initialized_data(void);

/// The pages holding the executable's `.data`, from its section headers (as
/// `fk_prefault_initialized_data` finds them). Returns 0 when found.
int fk_initialized_data_range(uintptr_t *start, uintptr_t *end);

#endif
