#define _GNU_SOURCE
#include "CFileSystem.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/vfs.h>
#include <unistd.h>

#define FK_TMPFS_MAGIC 0x01021994
#define FK_RAMFS_MAGIC 0x858458f6

int fk_is_memory_file_system(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return info.f_type == FK_TMPFS_MAGIC || info.f_type == FK_RAMFS_MAGIC;
}

int fk_open_unnamed(const char *directory, int mode) {
#ifdef O_TMPFILE
    return open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
#else
    errno = EOPNOTSUPP;
    return -1;
#endif
}

int fk_link_unnamed(int fd, const char *path) {
#ifdef AT_EMPTY_PATH
    if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0) return 0;
    if (errno != ENOENT && errno != EPERM) return -1;
#endif
    char link[32];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, link, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}
