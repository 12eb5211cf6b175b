#ifndef CFILESYSTEM_H
#define CFILESYSTEM_H

/// 1 when `path` is on a memory file system (tmpfs, ramfs), 0 when not, -1 when it can't be told.
/// Swift's Glibc module does not carry <sys/vfs.h>'s statfs, whose f_type says.
int fk_is_memory_file_system(const char *path);

/// An unnamed regular file in `directory`, open for reading and writing (`O_TMPFILE`, Linux 3.11+): it has no
/// name until `fk_link_unnamed` gives it one, and vanishes if the process dies first. -1 with errno
/// set when it can't be made (EOPNOTSUPP or EISDIR where the file system has no such files, ENOENT
/// when the directory is missing). O_TMPFILE is a macro Swift's Glibc module does not import.
int fk_open_unnamed(const char *directory, int mode);

/// Gives the unnamed file open as `fd` the name `path` (`linkat`; EEXIST when `path` exists).
/// `AT_EMPTY_PATH` where the kernel lets the process use it (recent kernels let any process link
/// a file it opened with O_TMPFILE; older ones ask for CAP_DAC_READ_SEARCH), else the file's
/// /proc/self/fd link, as open(2) describes.
int fk_link_unnamed(int fd, const char *path);

#endif
