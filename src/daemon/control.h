/* control.h: the control socket: a Unix stream socket speaking one command per line. */
#ifndef CONTINUO_DAEMON_CONTROL_H
#define CONTINUO_DAEMON_CONTROL_H

#include <poll.h>
#include <stddef.h>
#include <stdio.h>

#define CONTROL_MAX_CLIENTS 16
#define CONTROL_LINE_MAX    4096    /* longest request line, with its newline */
#define CONTROL_OUT_MAX     65536   /* replies waiting for a slow reader */
#define CONTROL_REPLY_MAX   4096    /* longest single reply */
#define CONTROL_FRAME_MAX   8192    /* longest frame to a watcher (docs/WATCH.md) */
/* A watcher's frames may fill its output up to this much; the rest stays
 * for replies, so a watcher that does not read loses frames, never its
 * connection (unless it also sends requests it does not read). */
#define CONTROL_FRAMES_MAX  (CONTROL_OUT_MAX - CONTROL_REPLY_MAX - 256)

/* One connected client: bounded input and output buffers (allocated once
 * per connection). */
typedef struct control_client {
    int    fd;                      /* -1 when the slot is free */
    char   in[CONTROL_LINE_MAX];
    size_t n_in;
    char  *out;                     /* CONTROL_OUT_MAX bytes; owned */
    size_t n_out;
    int    closing;                 /* drop once the output is written */
    int    watching;                /* it asked to watch: frames follow its replies */
    unsigned long frames_dropped;   /* frames it had no room for, in all */
    unsigned long unreported;       /* of those, not yet told in a "dropped" frame */
} control_client;

/* Handles one request LINE (no newline, NUL-terminated, printable) and
 * writes one reply line "ok ..." or "error ..." (no newline) into REPLY. */
typedef void (*control_handler)(void *user, char *line, char *reply, size_t len);

/* The listening socket and its clients.  A client is dropped when it sends
 * a line longer than CONTROL_LINE_MAX or bytes that are not text (after an
 * "error ..." reply when there is room), when its unread replies pass
 * CONTROL_OUT_MAX, or when it hangs up; the others are not affected. */
typedef struct control_server {
    int  fd;                        /* listening socket; -1 when closed */
    char path[108];                 /* socket path (unlinked on close) */
    control_client clients[CONTROL_MAX_CLIENTS];
    unsigned long dropped;          /* clients dropped for misbehaving */
    control_client *current;        /* the client whose request is being handled */
    char   hello[CONTROL_FRAME_MAX];    /* a frame queued right after the reply to the
                                       request being handled ("" none: `watch`'s hello) */
    int    watchers;                /* clients watching (control_watchers) */
} control_server;

/* The default path: $XDG_RUNTIME_DIR/continuo/ctl.  Returns 0, or -1 when
 * XDG_RUNTIME_DIR is not set (logged) or the path is too long. */
int control_default_path(char *buf, size_t len);

/* Creates PATH's directory (0700) when missing and listens on PATH (0600).
 * Refuses (-1, logged) when another instance answers on PATH; removes a
 * stale socket left by a dead one. */
int  control_open(control_server *cs, const char *path);
void control_close(control_server *cs);

/* Adds the pollfds of the socket and its clients to FDS (room for MAX;
 * CONTROL_MAX_CLIENTS + 1 is always enough); returns how many. */
int  control_poll_fds(const control_server *cs, struct pollfd *fds, int max);
/* Serves whatever FDS (as filled by control_poll_fds and polled) report. */
void control_dispatch(control_server *cs, const struct pollfd *fds, int n,
                      control_handler fn, void *user);

/* The protocol without the socket (also for tests and fuzzing): takes N
 * bytes a client sent, answers each complete line through FN into the
 * client's output buffer.  Returns CONTROL_OK; CONTROL_CLOSING after
 * queueing an error for a line too long or bytes that are not text (the
 * client is to be closed once its output is written); CONTROL_DROP when
 * the output buffer is full (the client does not read: close it now). */
enum { CONTROL_OK = 0, CONTROL_CLOSING = 1, CONTROL_DROP = 2 };
int  control_feed(control_server *cs, control_client *c, const char *data, size_t n,
                  control_handler fn, void *user);
/* A client slot for FD (may be -1 in tests): allocates its output buffer.
 * control_client_free closes FD (if >= 0) and frees the buffer. */
int  control_client_init(control_client *c, int fd);
void control_client_free(control_client *c);

/* Counts the watching clients into cs->watchers and returns it. */
int  control_watchers(control_server *cs);
/* FRAME (one line, no newline) to every watching client's queue, written
 * by control_dispatch when poll says the socket takes it (one send for the
 * frames of a loop pass, after what was due); a client whose queued frames would pass
 * CONTROL_FRAMES_MAX loses this one (counted, and told in a
 * {"type":"dropped",...} frame before the next one that fits). */
void control_broadcast(control_server *cs, const char *frame);

/* Client side (`continuo ctl`): sends LINE, reads one reply line into
 * REPLY.  Returns 0, or -1 after logging (no service, timeout). */
int control_request(const char *path, const char *line, char *reply, size_t len, int timeout_ms);
/* Client side (`continuo ctl watch`): sends `watch` and copies what comes
 * (the reply, then the frames) to OUT until the service closes the
 * connection or OUT fails.  Returns 0, or -1 after logging (no service). */
int control_watch(const char *path, FILE *out);

#endif
