#ifndef CMALLOC_H
#define CMALLOC_H

/// glibc's `mallopt(M_TOP_PAD, bytes)`: how much more than asked for the heap grows each time it
/// must. `malloc.h`, which declares it, is not part of Swift's Glibc module. Returns 1 when set.
int fk_malloc_set_top_pad(int bytes);

#endif
