#include "CFileSystem.h"
#include <sys/vfs.h>

#define FK_TMPFS_MAGIC 0x01021994
#define FK_RAMFS_MAGIC 0x858458f6

int fk_is_memory_file_system(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return info.f_type == FK_TMPFS_MAGIC || info.f_type == FK_RAMFS_MAGIC;
}
