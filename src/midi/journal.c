/* journal.c: the session journal's file: appended a track at a time, synced so that it is a valid MIDI file at every moment. */
#include "midi/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "session-"
#define SUFFIX ".mid"

/* All of BUF (N bytes) at OFFSET, or -1 with errno set. */
static int write_all_at(int fd, const uint8_t *buf, size_t n, uint64_t offset)
{
    while (n > 0) {
        ssize_t w = pwrite(fd, buf, n, (off_t)offset);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        buf += w;
        n -= (size_t)w;
        offset += (uint64_t)w;
    }
    return 0;
}

/* The directory entry of a new file reaches the disk too. */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int journal_file_create(journal_file *j, const char *dir, time_t start)
{
    struct tm tm;
    char stamp[32];
    memset(j, 0, sizeof *j);
    j->fd = -1;
    gmtime_r(&start, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    for (int k = 1; k < 100 && j->fd < 0; k++) {
        char suffix[8] = "";
        if (k > 1)
            snprintf(suffix, sizeof suffix, "-%d", k);
        if (snprintf(j->path, sizeof j->path, "%s/" PREFIX "%s%s" SUFFIX, dir, stamp, suffix) >= (int)sizeof j->path) {
            errno = ENAMETOOLONG;
            return -1;
        }
        j->fd = open(j->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (j->fd < 0 && errno != EEXIST)
            return -1;
    }
    if (j->fd < 0)
        return -1;
    uint8_t head[SMF_HEAD_BYTES];
    smf_head(head, 0);
    if (write_all_at(j->fd, head, sizeof head, 0) != 0 || fdatasync(j->fd) != 0 || sync_dir(dir) != 0) {
        int e = errno;
        close(j->fd);
        unlink(j->path);
        j->fd = -1;
        errno = e;
        return -1;
    }
    j->end = SMF_HEAD_BYTES;
    return 0;
}

int journal_file_append(journal_file *j, const smf_track_out *t)
{
    uint8_t *chunk;
    size_t n;
    if (j->fd < 0 || j->n_tracks >= JOURNAL_MAX_TRACKS) {
        errno = j->fd < 0 ? EBADF : EFBIG;
        return -1;
    }
    if (smf_track_chunk(t, 0, &chunk, &n) != 0)
        return -1;      /* errno: EINVAL (a track no file can hold) or ENOMEM */
    /* the chunk past the counted end, on the disk before the count says so */
    int rc = write_all_at(j->fd, chunk, n, j->end);
    free(chunk);
    if (rc != 0 || fdatasync(j->fd) != 0)
        return -1;
    unsigned count = j->n_tracks + 2;       /* the tempo track, and the new one */
    uint8_t be[2] = { (uint8_t)(count >> 8), (uint8_t)count };
    if (write_all_at(j->fd, be, 2, 10) != 0 || fdatasync(j->fd) != 0)
        return -1;
    j->n_tracks++;
    j->end += n;
    return 0;
}

void journal_file_close(journal_file *j)
{
    if (j->fd >= 0) {
        /* what a failed append left past the end goes */
        if (ftruncate(j->fd, (off_t)j->end) == 0)
            fdatasync(j->fd);
        close(j->fd);
    }
    j->fd = -1;
}

/* ---- the folder ---- */

static int is_session_name(const char *name)
{
    size_t n = strlen(name), p = strlen(PREFIX), s = strlen(SUFFIX);
    return n > p + s && strncmp(name, PREFIX, p) == 0 && strcmp(name + n - s, SUFFIX) == 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int journal_list(const char *dir, journal_file_fn fn, void *user)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_session_name(e->d_name))
            continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 64;
            char **p = realloc(names, c * sizeof *p);
            if (!p)
                break;
            names = p;
            cap = c;
        }
        if ((names[n] = strdup(e->d_name)) != NULL)
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        char path[2048];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &st) == 0)
            fn(path, (uint64_t)st.st_size, st.st_mtime, user);
        free(names[i]);
    }
    free(names);
    return (int)n;
}

/* What journal_prune knows of the folder. */
typedef struct prune_list {
    char   (*path)[2048];
    uint64_t *size;
    time_t   *mtime;
    size_t    n, cap;
    uint64_t  total;
} prune_list;

static void gather(const char *path, uint64_t size, time_t mtime, void *user)
{
    prune_list *l = user;
    if (l->n == l->cap) {
        size_t c = l->cap ? l->cap * 2 : 64;
        void *p = realloc(l->path, c * sizeof *l->path), *s = p ? realloc(l->size, c * sizeof *l->size) : NULL,
             *m = s ? realloc(l->mtime, c * sizeof *l->mtime) : NULL;
        if (p)
            l->path = p;
        if (s)
            l->size = s;
        if (!m)
            return;
        l->mtime = m;
        l->cap = c;
    }
    snprintf(l->path[l->n], sizeof l->path[l->n], "%s", path);
    l->size[l->n] = size;
    l->mtime[l->n++] = mtime;
    l->total += size;
}

int journal_prune(const char *dir, const char *keep, double max_days, uint64_t max_bytes)
{
    prune_list l = { 0 };
    int removed = 0;
    if (journal_list(dir, gather, &l) < 0)
        return 0;
    time_t now = time(NULL);
    for (size_t i = 0; i < l.n; i++) {
        int old = max_days > 0 && difftime(now, l.mtime[i]) > max_days * 86400.0;
        int big = max_bytes > 0 && l.total > max_bytes;
        if (!old && !big)
            break;                  /* oldest first: the rest are younger and fit */
        if (keep && strcmp(l.path[i], keep) == 0)
            continue;
        if (unlink(l.path[i]) == 0) {
            l.total -= l.size[i];
            removed++;
        }
    }
    free(l.path);
    free(l.size);
    free(l.mtime);
    return removed;
}
