/* journal.c: a session's journal: the three-track session file, replaced whole by folds, and the append-only log that keeps it whole through a crash (journal.h). */
#include "midi/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

#define PREFIX "session-"
#define SUFFIX ".mid"
#define LOG_SUFFIX ".log"

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

/* ---- the files' names ---- */

/* PATH's hidden twin: ".NAME" in PATH's folder, NAME its file name less
 * STRIP (when it ends so) with ADD after it, into BUF.  0, or -1 (ENAMETOOLONG). */
static int hidden_beside(const char *path, const char *strip, const char *add, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    size_t n = strlen(base), s = strlen(strip);
    if (n >= s && strcmp(base + n - s, strip) == 0)
        n -= s;
    if (snprintf(buf, len, "%.*s.%.*s%s", dir_len, path, (int)n, base, add) >= (int)len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

const char *journal_read_path(const char *session, char *buf, size_t len)
{
    struct stat st;
    if (hidden_beside(session, SUFFIX, LOG_SUFFIX, buf, len) == 0 && stat(buf, &st) == 0)
        return buf;
    snprintf(buf, len, "%s", session);
    return buf;
}

/* ---- whole files ---- */

/* All LEN bytes of FD into *OUT (malloc'd).  0, or -1 with errno set. */
static int read_all(int fd, size_t len, uint8_t **out)
{
    uint8_t *p = malloc(len ? len : 1);
    if (!p)
        return -1;
    for (size_t got = 0; got < len;) {
        ssize_t r = pread(fd, p + got, len - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;
            free(p);
            return -1;
        }
        got += (size_t)r;
    }
    *out = p;
    return 0;
}

/* The events of F's tracks named "continuo" (PART 1) or not (PART 0), in
 * time order, into a new array *EV of *N (free it).  0, or -1 (ENOMEM). */
static int part_events(const smf *f, int part, smf_event **ev, size_t *n)
{
    *n = 0;
    *ev = malloc(sizeof **ev * (f->n_events ? f->n_events : 1));
    if (!*ev)
        return -1;
    for (size_t i = 0; i < f->n_events; i++) {
        const char *name = f->tracks[f->events[i].track].name;
        if ((name && strcmp(name, "continuo") == 0) == part)
            (*ev)[(*n)++] = f->events[i];
    }
    return 0;
}

/* Appends chunk C (N bytes; freed) to *BUF of *LEN.  0, or -1 (ENOMEM). */
static int put_chunk(uint8_t **buf, size_t *len, uint8_t *c, size_t n)
{
    uint8_t *p = realloc(*buf, *len + n);
    if (p) {
        memcpy(p + *len, c, n);
        *buf = p;
        *len += n;
    }
    free(c);
    return p ? 0 : -1;
}

/* F's playing as a session file's bytes (the header, the tempo track,
 * "player", "continuo") into *OUT (malloc'd) of *N.  0, or -1 with errno. */
static int session_of(const smf *f, uint8_t **out, size_t *n)
{
    static const char *const names[2] = { "player", "continuo" };
    *n = SMF_HEAD_BYTES;
    if (!(*out = malloc(SMF_HEAD_BYTES)))
        return -1;
    smf_head(*out, 2);
    for (int part = 0; part < 2; part++) {
        smf_event *ev;
        size_t n_ev, n_chunk;
        uint8_t *chunk;
        if (part_events(f, part, &ev, &n_ev) != 0)
            goto fail;
        smf_track_out t = { names[part], ev, n_ev };
        int rc = smf_track_chunk(&t, 0, &chunk, &n_chunk);
        free(ev);
        if (rc != 0 || put_chunk(out, n, chunk, n_chunk) != 0)
            goto fail;
    }
    return 0;
fail:
    free(*out);
    *out = NULL;
    return -1;
}

/* The session file's bytes of a log's LEN bytes DATA (NAME in messages)
 * into *OUT of *N, and how many messages it holds into *EVENTS.  0, or -1
 * with errno: EINVAL (the log does not read: logged, with the byte). */
static int fold_bytes(const uint8_t *data, size_t len, const char *name, uint8_t **out, size_t *n, size_t *events)
{
    smf f;
    if (smf_read_mem(data, len, name, &f) != 0) {
        errno = EINVAL;
        return -1;
    }
    int rc = session_of(&f, out, n), e = errno;
    *events = f.n_events;
    smf_free(&f);
    errno = e;
    return rc;
}

/* BYTES (N) as FINAL, all or nothing: written to TMP, synced, renamed over
 * FINAL.  LOCKED: the new file open and flocked into *LOCKED (the log),
 * else closed.  0, or -1 with errno set (TMP removed). */
static int replace_file(const char *tmp, const char *final, const uint8_t *bytes, size_t n, int *locked)
{
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if ((locked && flock(fd, LOCK_EX) != 0) || write_all_at(fd, bytes, n, 0) != 0 || fdatasync(fd) != 0 ||
        rename(tmp, final) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return -1;
    }
    if (locked)
        *locked = fd;
    else
        close(fd);
    return 0;
}

/* ---- one session ---- */

/* The session file SESSION from BYTES (N), and its log LOG replaced by the
 * same bytes, flocked into *FD (the old one closed).  0, or -1 with errno. */
static int write_fold(const char *session, const char *log, const uint8_t *bytes, size_t n, int *fd)
{
    char tmp[1100];
    int new_fd;
    if (hidden_beside(session, "", ".tmp", tmp, sizeof tmp) != 0 || replace_file(tmp, session, bytes, n, NULL) != 0)
        return -1;
    if (hidden_beside(session, SUFFIX, LOG_SUFFIX ".tmp", tmp, sizeof tmp) != 0 ||
        replace_file(tmp, log, bytes, n, &new_fd) != 0)
        return -1;
    close(*fd);
    *fd = new_fd;
    return 0;
}

int journal_file_fold(journal_file *j)
{
    uint8_t *log, *bytes;
    size_t n, events;
    if (j->fd < 0) {
        errno = EBADF;
        return -1;
    }
    if (j->folded)
        return 0;
    if (read_all(j->fd, (size_t)j->end, &log) != 0)
        return -1;
    int rc = fold_bytes(log, (size_t)j->end, j->log_path, &bytes, &n, &events);
    free(log);
    if (rc != 0)
        return -1;
    rc = write_fold(j->path, j->log_path, bytes, n, &j->fd);
    free(bytes);
    if (rc != 0)
        return -1;
    j->end = n;
    j->n_tracks = 2;
    /* the new log's name on the disk before anything is appended to it */
    if (sync_dir(j->dir) != 0)
        return -1;
    j->folded = 1;
    return 0;
}

/* The log of the session named for STAMP and SUFFIX: made (O_EXCL: a
 * name no other session has) and flocked.  0; 1: the name is taken; -1
 * with errno set. */
static int make_log(journal_file *j, const char *stamp, const char *suffix)
{
    struct stat st, mine;
    if (snprintf(j->path, sizeof j->path, "%s/" PREFIX "%s%s" SUFFIX, j->dir, stamp, suffix) >= (int)sizeof j->path ||
        hidden_beside(j->path, SUFFIX, LOG_SUFFIX, j->log_path, sizeof j->log_path) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (stat(j->path, &st) == 0)
        return 1;
    j->fd = open(j->log_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (j->fd < 0)
        return errno == EEXIST ? 1 : -1;
    /* a recovery that took the new log for a crash's before this lock may
     * have removed it: then the name is tried again */
    if (flock(j->fd, LOCK_EX) != 0 || fstat(j->fd, &mine) != 0 || stat(j->log_path, &st) != 0 ||
        st.st_ino != mine.st_ino) {
        close(j->fd);
        j->fd = -1;
        return 1;
    }
    return 0;
}

/* A session's two files: the log with its header, then the first fold
 * (the session file with two empty parts, the log the same). */
static int start_session(journal_file *j)
{
    uint8_t head[SMF_HEAD_BYTES];
    smf_head(head, 0);
    j->end = SMF_HEAD_BYTES;
    if (write_all_at(j->fd, head, sizeof head, 0) != 0 || fdatasync(j->fd) != 0 || journal_file_fold(j) != 0)
        return -1;
    return 0;
}

int journal_file_create(journal_file *j, const char *dir, time_t start)
{
    struct tm tm;
    char stamp[32];
    int rc = 1;
    memset(j, 0, sizeof *j);
    j->fd = -1;
    if (snprintf(j->dir, sizeof j->dir, "%s", dir) >= (int)sizeof j->dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    gmtime_r(&start, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    for (int k = 1; k < 100 && rc == 1; k++) {
        char suffix[8] = "";
        if (k > 1)
            snprintf(suffix, sizeof suffix, "-%d", k);
        rc = make_log(j, stamp, suffix);
    }
    if (rc == 1)
        errno = EEXIST;
    if (rc == 0 && start_session(j) == 0)
        return 0;
    int e = errno;
    if (j->fd >= 0) {
        close(j->fd);
        unlink(j->path);
        unlink(j->log_path);
    }
    j->fd = -1;
    errno = e;
    return -1;
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
    j->appended++;
    j->end += n;
    j->folded = 0;
    return 0;
}

int journal_file_close(journal_file *j)
{
    int rc = 0;
    if (j->fd < 0)
        return 0;
    if (j->appended == 0)
        unlink(j->path);            /* a session without a message is none */
    else
        rc = journal_file_fold(j);
    int e = errno;
    if (rc == 0) {
        unlink(j->log_path);
        sync_dir(j->dir);
    }
    close(j->fd);
    j->fd = -1;
    errno = e;
    return rc;
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

/* ---- recovery ---- */

static int is_log_name(const char *name)
{
    size_t n = strlen(name), p = strlen("." PREFIX), s = strlen(LOG_SUFFIX);
    return n > p + s && strncmp(name, "." PREFIX, p) == 0 && strcmp(name + n - s, LOG_SUFFIX) == 0;
}

/* A crashed session's log LOG (open as *FD, flocked, LEN bytes) folded
 * into SESSION and removed.  1: folded; 0: it held nothing (both files
 * removed); -1 with errno: it stays (EINVAL: it does not read, logged). */
static int fold_log(int *fd, size_t len, const char *log, const char *session)
{
    uint8_t *data = NULL, *bytes = NULL;
    size_t n = 0, events = 0;
    int rc = 0;
    if (read_all(*fd, len, &data) != 0)
        rc = -1;
    else if (fold_bytes(data, len, log, &bytes, &n, &events) != 0)
        rc = len < SMF_HEAD_BYTES ? 0 : -1;     /* shorter: a crash cut its header as the session began */
    else if (events > 0)
        rc = write_fold(session, log, bytes, n, fd) == 0 ? 1 : -1;
    int e = errno;
    free(data);
    free(bytes);
    if (rc == 0)
        unlink(session);
    if (rc >= 0)
        unlink(log);
    errno = e;
    return rc;
}

/* The log NAME of DIR, unless a service holds it (its live log) or another
 * recovery took it since the folder was read; with the half-written
 * replacements a crash in a fold left.  As fold_log. */
static int recover_one(const char *dir, const char *name)
{
    char log[2048], session[2048], tmp[2100];
    struct stat st, mine;
    snprintf(log, sizeof log, "%s/%s", dir, name);
    snprintf(session, sizeof session, "%s/%.*s" SUFFIX, dir, (int)(strlen(name) - 1 - strlen(LOG_SUFFIX)), name + 1);
    int fd = open(log, O_RDWR | O_CLOEXEC), rc = 0;
    if (fd < 0)
        return 0;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &mine) == 0 && stat(log, &st) == 0 && st.st_ino == mine.st_ino) {
        rc = fold_log(&fd, (size_t)mine.st_size, log, session);
        if (rc < 0 && errno == EINVAL)
            log_error("journal: %s stays as it is: it does not read (above)", log);
        else if (rc < 0)
            log_error("journal: cannot fold %s into %s: %s", log, session, strerror(errno));
        snprintf(tmp, sizeof tmp, "%s.tmp", log);
        unlink(tmp);
        hidden_beside(session, "", ".tmp", tmp, sizeof tmp);
        unlink(tmp);
    }
    close(fd);
    return rc;
}

int journal_recover(const char *dir)
{
    DIR *d = opendir(dir);
    int folded = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (is_log_name(e->d_name))
            folded += recover_one(dir, e->d_name) > 0;
    closedir(d);
    if (folded)
        sync_dir(dir);
    return folded;
}
