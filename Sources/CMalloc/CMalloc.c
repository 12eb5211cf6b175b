#include "CMalloc.h"
#include <stdint.h>
#include <stdlib.h>  // defines __GLIBC__ on glibc
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
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

int fk_initialized_data_range(uintptr_t *start, uintptr_t *end) {
#if defined(__linux__) && defined(__LP64__)
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int result = -1;
    Elf64_Ehdr header;
    Elf64_Shdr sections[128];
    char names[2048];
    if (pread(fd, &header, sizeof header, 0) != (ssize_t)sizeof header || memcmp(header.e_ident, ELFMAG, SELFMAG) != 0
        || header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)
        || header.e_shnum == 0 || header.e_shnum > 128 || header.e_shstrndx >= header.e_shnum) goto done;
    size_t tableSize = (size_t)header.e_shnum * sizeof(Elf64_Shdr);
    if (pread(fd, sections, tableSize, (off_t)header.e_shoff) != (ssize_t)tableSize) goto done;
    const Elf64_Shdr *nameTable = &sections[header.e_shstrndx];
    size_t namesSize = nameTable->sh_size < sizeof names ? nameTable->sh_size : sizeof names;
    if (pread(fd, names, namesSize, (off_t)nameTable->sh_offset) != (ssize_t)namesSize) goto done;
    // Where the executable was loaded against where it was linked to: 0 at a fixed address.
    uintptr_t bias = (uintptr_t)getauxval(AT_ENTRY) - (uintptr_t)header.e_entry;
    for (int i = 0; i < header.e_shnum; i++) {
        const Elf64_Shdr *section = &sections[i];
        if (section->sh_name >= namesSize || namesSize - section->sh_name < sizeof ".data"
            || memcmp(names + section->sh_name, ".data", sizeof ".data") != 0
            || section->sh_type != SHT_PROGBITS || (section->sh_flags & (SHF_ALLOC | SHF_WRITE)) != (SHF_ALLOC | SHF_WRITE)
            || section->sh_size == 0) continue;
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        *start = (bias + section->sh_addr) & ~(page - 1);
        *end = (bias + section->sh_addr + section->sh_size + page - 1) & ~(page - 1);
        result = 0;
        break;
    }
done:
    close(fd);
    return result;
#else
    (void)start;
    (void)end;
    return -1;
#endif
}

int fk_prefault_initialized_data(void) {
#if defined(__linux__)
    uintptr_t start, end;
    // Only a small one: each page is copied, whether it is written later or not.
    if (fk_initialized_data_range(&start, &end) != 0 || end - start > (8u << 20)) return -1;
    return madvise((void *)start, end - start, MADV_POPULATE_WRITE);
#else
    return -1;
#endif
}
