/* journal.c: the "journal" output: every message the session keeps, written as it is played by a thread of its own into a session's append-only log, and folded into its three-track MIDI file in the pauses (midi/journal.h). */
#include "config.h"

#include "io/backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "midi/journal.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/ring.h"

#define JOURNAL_RING      (1 << 16)    /* messages between the loop and the writer (about half an
                                          hour of dense playing while the disk is slow) */
#define JOURNAL_TICK_NS   100000000LL  /* the writer looks at the ring ten times a second */
#define JOURNAL_QUIET_NS  300000000LL  /* a part's messages are written once it is quiet this long */
#define JOURNAL_EVERY_NS  700000000LL  /* ... or once the oldest of them is this old: every message
                                          is on the disk within a second of its time */
#define JOURNAL_RETRY_NS  5000000000LL /* after a failed write, the next try */
#define JOURNAL_FOLD_NS   3000000000LL /* the log is folded into the session file once both parts
                                          have been quiet this long (and at a new file, and the stop) */
#define JOURNAL_HOLD      (1 << 20)    /* messages a part holds unwritten (disk full): past it new
                                          ones are dropped (counted) */

enum { PART_PLAYER = 0, PART_MODEL = 1, N_PARTS = 2 };
static const char *const part_names[N_PARTS] = { "player", "continuo" };

/* One message from the loop. */
typedef struct jmsg {
    double  time;       /* session seconds */
    int64_t at_ns;      /* CLOCK_MONOTONIC when kept */
    uint8_t part, status, data1, data2;
} jmsg;

/* What a part has not written yet: events on the current file's time line. */
typedef struct pending {
    smf_event *ev;      /* owned by the writer */
    size_t     n, cap;
    int64_t    first_ns, last_ns;
} pending;

typedef struct journal {
    ring        in;             /* loop -> writer */
    pthread_t   thread;
    _Atomic int quit;
    pthread_mutex_t lock;       /* with wake: close wakes the writer at once */
    pthread_cond_t  wake;
    char        dir[1024];
    double      idle_s;         /* a new file after this long without a message */
    double      max_days;
    uint64_t    max_bytes;
    /* the writer's */
    journal_file file;
    double      file_t0;        /* session time of the file's start */
    double      last_time;      /* session time of the last message */
    int64_t     last_ns;        /* CLOCK_MONOTONIC of the last message */
    pending     part[N_PARTS];
    int64_t     retry_ns;       /* no write before this after a failure */
    /* read by the loop (ctl status) */
    _Atomic int      failing;   /* the last write failed: errno, 0 when fine */
    _Atomic uint64_t written, dropped;
} journal;

/* ---- the writer thread ---- */

static int hold(pending *p, const smf_event *e)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 4096;
        if (cap > JOURNAL_HOLD)
            cap = JOURNAL_HOLD;
        smf_event *ev = cap > p->cap ? realloc(p->ev, cap * sizeof *ev) : NULL;
        if (!ev)
            return -1;
        p->ev = ev;
        p->cap = cap;
    }
    p->ev[p->n++] = *e;
    return 0;
}

/* Says once that writing failed, and once that it works again. */
static void set_failing(journal *j, int err)
{
    int was = atomic_exchange(&j->failing, err);
    if (err && !was)
        log_warn("journal: cannot write in %s: %s; the service plays on, keeps what it could not write "
                 "and tries again every %d s", j->dir, strerror(err), (int)(JOURNAL_RETRY_NS / 1000000000LL));
    else if (!err && was)
        log_info("journal: writing in %s again (%s)", j->dir, j->file.path);
}

/* The file of the held messages (their time line starts at file_t0). */
static int open_file(journal *j)
{
    mkdir(j->dir, 0700);
    if (journal_file_create(&j->file, j->dir, time(NULL)) != 0)
        return -1;
    journal_prune(j->dir, j->file.path, j->max_days, j->max_bytes);
    log_info("journal: %s", j->file.path);
    return 0;
}

/* PART's held messages as one track of the file (FORCE: even before the
 * next try is due).  0, or -1 (kept for later). */
static int write_part(journal *j, int part, int64_t now, int force)
{
    pending *p = &j->part[part];
    if (p->n == 0)
        return 0;
    if (!force && now < j->retry_ns)
        return -1;
    if (j->file.fd < 0 && open_file(j) != 0) {
        j->retry_ns = now + JOURNAL_RETRY_NS;
        set_failing(j, errno);
        return -1;
    }
    smf_track_out t = { part_names[part], p->ev, p->n };
    int rc = journal_file_append(&j->file, &t);
    int e = rc ? errno : 0;
    /* The log's track count full: folded, it holds two, and the track is
     * written once more.  Once: EFBIG is also a file size limit (a fold
     * does not help there), and a second failure is a failure. */
    if (rc && e == EFBIG && journal_file_fold(&j->file) == 0) {
        rc = journal_file_append(&j->file, &t);
        e = rc ? errno : 0;
    }
    if (rc) {
        if (e == EINVAL) {          /* a track no retry can write (not a full disk or memory): dropped, not held forever */
            log_error("journal: %zu messages of the %s part dropped: they cannot be written (see above)",
                      (size_t)p->n, part_names[part]);
            atomic_fetch_add(&j->dropped, p->n);
            p->n = 0;
            return -1;
        }
        j->retry_ns = now + JOURNAL_RETRY_NS;
        set_failing(j, e);
        return -1;
    }
    atomic_fetch_add(&j->written, p->n);
    p->n = 0;
    set_failing(j, 0);
    return 0;
}

/* The session file from its log, and the log closed and removed (a new
 * file, the stop); when that fails the log stays, and the next start folds
 * it. */
static void close_file(journal *j)
{
    if (j->file.fd >= 0 && journal_file_close(&j->file) != 0)
        log_warn("journal: cannot fold %s: %s; its log stays beside it, and the next start folds it",
                 j->file.path, strerror(errno));
}

/* In a pause (both parts quiet JOURNAL_FOLD_NS, nothing held), what the
 * log gained since the last fold goes into the session file. */
static void fold_in_pause(journal *j, int64_t now)
{
    if (j->file.fd < 0 || j->file.folded || j->part[0].n || j->part[1].n || now - j->last_ns < JOURNAL_FOLD_NS ||
        now < j->retry_ns)
        return;
    if (journal_file_fold(&j->file) != 0) {
        j->retry_ns = now + JOURNAL_RETRY_NS;
        set_failing(j, errno);
    } else {
        set_failing(j, 0);
    }
}

/* One message into its part, on the current file's time line (a new file
 * after idle_s of silence: the old one's parts are written first). */
static void take(journal *j, const jmsg *m, int64_t now)
{
    if (j->last_time > 0 && m->time - j->last_time > j->idle_s) {
        for (int k = 0; k < N_PARTS; k++)
            write_part(j, k, now, 0);
        if (j->part[0].n == 0 && j->part[1].n == 0)
            close_file(j);  /* (else it stays: a later try writes them there) */
    }
    if (j->file.fd < 0 && j->part[0].n == 0 && j->part[1].n == 0)
        j->file_t0 = m->time;
    j->last_time = m->time;
    j->last_ns = m->at_ns;
    pending *p = &j->part[m->part];
    smf_event e = { .time = m->time - j->file_t0, .status = m->status, .data1 = m->data1, .data2 = m->data2 };
    if (e.time < 0)
        e.time = 0;
    if (p->n > 0 && e.time < p->ev[p->n - 1].time)
        e.time = p->ev[p->n - 1].time;     /* a part's track is in time order (its sources' clocks may skew) */
    if (p->n == 0)
        p->first_ns = m->at_ns;
    p->last_ns = m->at_ns;
    /* full (the disk has been failing long): what it holds stays, the new
     * message goes (the recording still has it for `ctl save`) */
    if (p->n == JOURNAL_HOLD || hold(p, &e) != 0)
        atomic_fetch_add(&j->dropped, 1);
}

/* Writes each part that has been quiet JOURNAL_QUIET_NS (a phrase, an
 * answer) or whose oldest held message is JOURNAL_EVERY_NS old (it plays
 * on): every message is on the disk within a second.  ALL: everything
 * (the service stops). */
static void write_due(journal *j, int64_t now, int all)
{
    for (int k = 0; k < N_PARTS; k++) {
        const pending *p = &j->part[k];
        if (p->n && (all || now - p->last_ns >= JOURNAL_QUIET_NS || now - p->first_ns >= JOURNAL_EVERY_NS))
            write_part(j, k, now, all);
    }
}

static void *writer_main(void *arg)
{
    journal *j = arg;
    jmsg m;
    for (;;) {
        int quit = atomic_load(&j->quit);
        int64_t now = clock_now_ns();
        while (ring_pop(&j->in, &m))
            take(j, &m, now);
        write_due(j, now, quit);
        fold_in_pause(j, now);
        if (quit)
            break;
        /* a tick, or at once when the service stops (its exit waits for this) */
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += JOURNAL_TICK_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&j->lock);
        if (!atomic_load(&j->quit))
            pthread_cond_timedwait(&j->wake, &j->lock, &until);
        pthread_mutex_unlock(&j->lock);
    }
    close_file(j);
    return NULL;
}

/* ---- the backend (the loop's side) ---- */

static double setting(midi_port *p, const char *key, double def)
{
    char buf[64];
    const char *v = p->settings && p->settings->get ? p->settings->get(p->settings->user, key, buf, sizeof buf) : NULL;
    return v && *v ? atof(v) : def;
}

static int jn_open(midi_port *p, const char *arg, char *err, size_t errlen)
{
    if (!*arg) {
        snprintf(err, errlen, "needs a folder: journal:DIR");
        return -1;
    }
    /* a folder it cannot make or write in now is not an error: the writer
     * says so once and tries again until it can (the service plays on) */
    mkdir(arg, 0700);
    /* what a crash left, before anything plays (an hour's log folds in
     * about 25 ms): the sessions are whole once the service answers */
    int folded = journal_recover(arg);
    if (folded > 0)
        log_info("journal: %d session%s a crash left folded into %s", folded, folded > 1 ? "s" : "", arg);
    journal *j = calloc(1, sizeof *j);
    if (!j || ring_init(&j->in, JOURNAL_RING, sizeof(jmsg)) != 0) {
        free(j);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(j->dir, sizeof j->dir, "%s", arg);
    j->file.fd = -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->wake, &ca);
    pthread_condattr_destroy(&ca);
    j->idle_s = 60 * setting(p, "journal_idle_minutes", 10);
    j->max_days = setting(p, "journal_max_days", 0);
    j->max_bytes = (uint64_t)(setting(p, "journal_max_mb", 0) * 1048576.0);
    int e = pthread_create(&j->thread, NULL, writer_main, j);
    if (e) {
        pthread_cond_destroy(&j->wake);
        pthread_mutex_destroy(&j->lock);
        ring_free(&j->in);
        free(j);
        snprintf(err, errlen, "cannot start its thread: %s", strerror(e));
        return -1;
    }
    p->priv = j;
    return 0;
}

/* The writer writes what it holds and stops. */
static void jn_close(midi_port *p)
{
    journal *j = p->priv;
    pthread_mutex_lock(&j->lock);
    atomic_store(&j->quit, 1);
    pthread_cond_signal(&j->wake);
    pthread_mutex_unlock(&j->lock);
    pthread_join(j->thread, NULL);
    pthread_cond_destroy(&j->wake);
    pthread_mutex_destroy(&j->lock);
    for (int k = 0; k < N_PARTS; k++)
        free(j->part[k].ev);
    ring_free(&j->in);
    free(j);
}

/* Never blocks, never allocates: a full ring drops the message (counted). */
static int jn_keep(midi_port *p, const midi_msg *msg, midi_part part, double time)
{
    journal *j = p->priv;
    jmsg m = { time, clock_now_ns(), (uint8_t)(part == MIDI_PART_MODEL ? PART_MODEL : PART_PLAYER), msg->status,
               msg->data1, msg->data2 };
    if (ring_push(&j->in, &m) != 0) {
        atomic_fetch_add(&j->dropped, 1);
        return -1;
    }
    return 0;
}

static void jn_describe(midi_port *p, char *buf, size_t len)
{
    journal *j = p->priv;
    int e = atomic_load(&j->failing);
    uint64_t w = atomic_load(&j->written), d = atomic_load(&j->dropped);
    if (e)
        snprintf(buf, len, "failing:\"%s\" written=%llu dropped=%llu", strerror(e), (unsigned long long)w,
                 (unsigned long long)d);
    else
        snprintf(buf, len, "ok written=%llu dropped=%llu", (unsigned long long)w, (unsigned long long)d);
}

const midi_backend midi_backend_journal = {
    .name = "journal",
    .usage = "journal:DIR (every session written into DIR as it is played: a MIDI file each, player and continuo on a track each; a crash loses at most the last second)",
    .dirs = MIDI_OUT,
    .open = jn_open,
    .close = jn_close,
    .keep = jn_keep,
    .describe = jn_describe,
};
