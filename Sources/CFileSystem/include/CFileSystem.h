#ifndef CFILESYSTEM_H
#define CFILESYSTEM_H

/// 1 when `path` is on a memory file system (tmpfs, ramfs), 0 when not, -1 when it can't be told.
/// Swift's Glibc module does not carry <sys/vfs.h>'s statfs, whose f_type says.
int fk_is_memory_file_system(const char *path);

#endif
