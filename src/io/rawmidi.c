/* rawmidi.c: byte-stream MIDI backends: "fifo" (FIFO or file) and "raw" (/dev/snd/midi*). */
#include "config.h"

#include "io/backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

#define RAW_RETRY_S 1     /* seconds between tries to open a lost input */

/* State of one fifo/raw port. */
typedef struct raw_port {
    int         fd;
    char       *path;           /* owned */
    int         is_fifo;        /* input: reopen when the writer leaves */
    midi_stream parser;
    uint8_t     buf[512];       /* bytes read but not yet parsed */
    size_t      pos, len;
    int         waiting;        /* input gone: fd is a retry timer */
} raw_port;

static int raw_open_common(midi_port *p, const char *arg, int want_fifo,
                           char *err, size_t errlen)
{
    if (!*arg) {
        snprintf(err, errlen, "no path given (use %s:PATH)", want_fifo ? "fifo" : "raw");
        return -1;
    }
    raw_port *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(arg))) {
        snprintf(err, errlen, "out of memory");
        free(r);
        return -1;
    }
    midi_stream_init(&r->parser);
    struct stat st;
    int exists = stat(arg, &st) == 0;
    if (!exists && (p->dir == MIDI_IN || !want_fifo)) {
        snprintf(err, errlen, "%s", strerror(errno));
        goto fail;
    }
    if (p->dir == MIDI_IN) {
        if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
            snprintf(err, errlen, "not a FIFO or MIDI device");
            goto fail;
        }
        r->is_fifo = S_ISFIFO(st.st_mode);
        r->fd = open(arg, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    } else if (exists && S_ISFIFO(st.st_mode)) {
        /* Read-write: opening never waits for a reader, and a reader that
         * leaves cannot raise SIGPIPE; a full FIFO drops messages. */
        r->fd = open(arg, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    } else if (exists && S_ISCHR(st.st_mode)) {
        r->fd = open(arg, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    } else if (!want_fifo) {
        snprintf(err, errlen, "not a MIDI device");
        goto fail;
    } else {
        r->fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644);
    }
    if (r->fd < 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        goto fail;
    }
    p->priv = r;
    return 0;
fail:
    free(r->path);
    free(r);
    return -1;
}

static int fifo_open(midi_port *p, const char *arg, char *err, size_t errlen)
{
    return raw_open_common(p, arg, 1, err, errlen);
}

static int raw_dev_open(midi_port *p, const char *arg, char *err, size_t errlen)
{
    return raw_open_common(p, arg, 0, err, errlen);
}

static void raw_close(midi_port *p)
{
    raw_port *r = p->priv;
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free(r->path);
    free(r);
    p->priv = NULL;
}

static int raw_poll_fds(midi_port *p, struct pollfd *fds, int max)
{
    raw_port *r = p->priv;
    if (p->dir != MIDI_IN || max < 1)
        return 0;
    fds[0].fd = r->fd;
    fds[0].events = POLLIN;
    fds[0].revents = 0;
    return 1;
}

/* Puts FD in place of the port's fd (same number, so the caller's pollfd
 * stays valid) and closes FD. */
static int swap_fd(raw_port *r, int fd)
{
    int rc = dup2(fd, r->fd);
    close(fd);
    return rc < 0 ? -1 : 0;
}

/* A new writer or device starts a new stream: drop the half-read message. */
static void restart_parser(raw_port *r)
{
    midi_stream_stats keep = r->parser.stats;
    midi_stream_init(&r->parser);
    r->parser.stats = keep;
    r->pos = r->len = 0;
}

/* The input went away (device unplugged, FIFO removed): put a timer that
 * fires every RAW_RETRY_S in its place, so poll() stays quiet, and try to
 * open the path again at each tick. */
static int start_waiting(midi_port *p, raw_port *r, const char *why)
{
    int t = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec its = { { RAW_RETRY_S, 0 }, { RAW_RETRY_S, 0 } };
    if (t < 0 || timerfd_settime(t, 0, &its, NULL) != 0 || swap_fd(r, t) != 0) {
        log_error("MIDI input '%s': %s, and cannot wait for it: %s", p->name, why,
                  strerror(errno));
        if (t >= 0)
            close(t);
        return -1;
    }
    log_warn("MIDI input '%s': %s; trying to open it again every %d s", p->name, why,
             RAW_RETRY_S);
    r->waiting = 1;
    restart_parser(r);
    return 0;
}

/* Opens the input path again in place of the current fd; returns 0, or -1
 * (errno set) when it is not there. */
static int reopen(midi_port *p, raw_port *r)
{
    int fd = open(r->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (swap_fd(r, fd) != 0)
        return -1;
    restart_parser(r);
    p->stats.reopened++;
    return 0;
}

static int raw_read(midi_port *p, midi_msg *out, int64_t *age_ns, int max)
{
    (void)age_ns;              /* arrival times unknown: read time it is */
    raw_port *r = p->priv;
    int n = 0;
    if (r->waiting) {
        uint64_t ticks;
        if (read(r->fd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
            return 0;
        if (reopen(p, r) != 0)
            return 0;           /* still gone; the timer stays */
        r->waiting = 0;
        log_info("MIDI input '%s': open again", p->name);
        return 0;               /* poll() says when there is something to read */
    }
    for (;;) {
        if (r->pos < r->len) {
            size_t used = 0;
            n += (int)midi_stream_parse(&r->parser, r->buf + r->pos, r->len - r->pos,
                                        out + n, (size_t)(max - n), &used);
            r->pos += used;
            p->stats.parser = r->parser.stats;
            if (n == max)
                return n;       /* more may be buffered: the caller reads again */
        }
        ssize_t got = read(r->fd, r->buf, sizeof r->buf);
        if (got > 0) {
            r->pos = 0;
            r->len = (size_t)got;
            continue;
        }
        if (got == 0) {
            if (!r->is_fifo)
                return n;
            /* The FIFO's writer went away: open it afresh (the old open
             * would report POLLHUP forever and make poll() spin). */
            if (reopen(p, r) != 0) {
                char why[128];
                snprintf(why, sizeof why, "cannot reopen %s: %s", r->path, strerror(errno));
                return start_waiting(p, r, why) == 0 ? n : -1;
            }
            return n;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return n;
        char why[128];
        snprintf(why, sizeof why, "read failed: %s", strerror(errno));
        return start_waiting(p, r, why) == 0 ? n : -1;
    }
}

static int raw_write(midi_port *p, const midi_msg *msg)
{
    raw_port *r = p->priv;
    uint8_t bytes[3];
    int len = midi_msg_encode(msg, bytes);
    for (;;) {
        ssize_t put = write(r->fd, bytes, (size_t)len);
        if (put == len)
            return 0;
        if (put < 0 && errno == EINTR)
            continue;
        if (put >= 0)
            errno = EIO;        /* short write: the device took part of it */
        return -1;
    }
}

static int raw_list(midi_port_list_fn fn, void *user)
{
    DIR *d = opendir("/dev/snd");
    if (!d)
        return 0;       /* no sound devices: nothing to list, not an error */
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "midiC", 5) != 0)
            continue;
        char spec[300];
        snprintf(spec, sizeof spec, "raw:/dev/snd/%s", e->d_name);
        midi_port_info info = { "raw", spec, "raw MIDI device", MIDI_IN | MIDI_OUT };
        fn(&info, user);
        n++;
    }
    closedir(d);
    return n;
}

const midi_backend midi_backend_fifo = {
    .name = "fifo",
    .usage = "fifo:PATH (a FIFO to read, or a FIFO or file to write)",
    .dirs = MIDI_IN | MIDI_OUT,
    .open = fifo_open,
    .close = raw_close,
    .poll_fds = raw_poll_fds,
    .read = raw_read,
    .write = raw_write,
    .list = NULL,
};

const midi_backend midi_backend_raw = {
    .name = "raw",
    .usage = "raw:DEVICE (a raw MIDI device such as /dev/snd/midiC1D0)",
    .dirs = MIDI_IN | MIDI_OUT,
    .open = raw_dev_open,
    .close = raw_close,
    .poll_fds = raw_poll_fds,
    .read = raw_read,
    .write = raw_write,
    .list = raw_list,
};
