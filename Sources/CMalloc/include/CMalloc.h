#ifndef CMALLOC_H
#define CMALLOC_H

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

#endif
