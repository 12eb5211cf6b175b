// What putting a downloaded file in place costs, by how it is done: the part of fetchctl's CPU a job
// that curl doesn't spend because it doesn't give the same guarantee (bench/placement.sh).
//
//   placement METHOD OUT CACHE COUNT SIZE
//
// Writes COUNT files of SIZE bytes named OUT/<n>.bin, each in one write(2), and prints the process's
// CPU time (user + system) in milliseconds. METHOD:
//   create    curl's way: the final name created, written, closed. A kill mid-write leaves a
//             partial file under the final name.
//   unnamed   fetchctl's without the response cache (SPEC §2.4): an unnamed file (O_TMPFILE) in
//             OUT, written, then linked under its final name; the name appears only when complete.
//   cached    fetchctl's with the response cache on a `save:` (SQLiteCacheBodyWriter, shared): the
//             body created under its name in CACHE/bodies/x/, written, its size and modification
//             time read (fstat) for the index row, then hard-linked under its final name.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static void fail(const char *what, const char *path) {
    fprintf(stderr, "placement: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: placement create|unnamed|cached OUT CACHE COUNT SIZE\n");
        return 2;
    }
    const char *method = argv[1], *out = argv[2], *cache = argv[3];
    long count = atol(argv[4]), size = atol(argv[5]);
    char *body = calloc(1, (size_t)size);
    char path[4096], name[64];
    int cacheDirectory = open(cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!body || cacheDirectory < 0) fail("open", cache);
    for (long n = 0; n < count; n++) {
        snprintf(path, sizeof path, "%s/%ld.bin", out, n);
        int fd;
        if (strcmp(method, "create") == 0) {
            if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) fail("create", path);
            if (write(fd, body, (size_t)size) != size) fail("write", path);
        } else if (strcmp(method, "unnamed") == 0) {
            if ((fd = open(out, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644)) < 0) fail("open unnamed in", out);
            if (write(fd, body, (size_t)size) != size) fail("write", path);
            // As fetchctl's fk_link_unnamed: by descriptor, else through /proc where that is refused.
            if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) != 0) {
                char proc[32];
                snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
                if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0) fail("link", path);
            }
        } else if (strcmp(method, "cached") == 0) {
            snprintf(name, sizeof name, "bodies/%lx/b%lx", n & 15, n);
            if ((fd = openat(cacheDirectory, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) fail("create", name);
            if (write(fd, body, (size_t)size) != size) fail("write", name);
            struct stat info;
            if (fstat(fd, &info) != 0) fail("fstat", name);
            if (linkat(cacheDirectory, name, AT_FDCWD, path, 0) != 0) fail("link", path);
        } else {
            fprintf(stderr, "placement: unknown method %s\n", method);
            return 2;
        }
        close(fd);
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("%.3f\n", (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3);
    return 0;
}
