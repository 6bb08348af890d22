/* memfile.h: puts fuzz input bytes behind a path (an anonymous memfd, /proc/self/fd/N) for readers that only open paths. */
#ifndef CONTINUO_MEMFILE_H
#define CONTINUO_MEMFILE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes DATA to a new memfd and its path to PATH (N bytes); returns the fd
 * (close it when done), or -1 when the memfd cannot be made. */
static inline int memfile_make(const uint8_t *data, size_t size, char *path, size_t n)
{
    int fd = memfd_create("continuo-fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
