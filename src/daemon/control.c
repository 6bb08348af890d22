/* control.c: the control socket: private directory, instance check, bounded clients. */
#include "daemon/control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

int control_default_path(char *buf, size_t len)
{
    const char *dir = getenv("XDG_RUNTIME_DIR");
    if (!dir || dir[0] != '/') {
        log_error("cannot place the control socket: XDG_RUNTIME_DIR is not set "
                  "(set it, or control_socket in the config)");
        return -1;
    }
    int n = snprintf(buf, len, "%s/continuo/ctl", dir);
    if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof ((struct sockaddr_un *)0)->sun_path) {
        log_error("cannot place the control socket: %s/continuo/ctl is too long", dir);
        return -1;
    }
    return 0;
}

static int make_addr(struct sockaddr_un *sa, const char *path)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa->sun_path)
        return -1;
    strcpy(sa->sun_path, path);
    return 0;
}

/* The directory holding PATH: created 0700 when missing, refused when
 * someone else owns it or others can write into it. */
static int prepare_dir(const char *path)
{
    char dir[sizeof ((struct sockaddr_un *)0)->sun_path];
    struct stat st;
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    if (mkdir(dir, 0700) == 0)
        return 0;
    if (errno != EEXIST) {
        log_error("cannot create the control socket directory %s: %s", dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        log_error("cannot use %s for the control socket: not a directory", dir);
        return -1;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 0022)) {
        log_error("cannot use %s for the control socket: owned by another user or "
                  "writable by others", dir);
        return -1;
    }
    return 0;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int control_open(control_server *cs, const char *path)
{
    struct sockaddr_un sa;
    memset(cs, 0, sizeof *cs);
    cs->fd = -1;
    for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
        cs->clients[i].fd = -1;
    if (make_addr(&sa, path) < 0) {
        log_error("cannot open the control socket %s: path too long", path);
        return -1;
    }
    if (prepare_dir(path) < 0)
        return -1;
    /* Another instance?  Ask: a live socket answers, a stale one refuses. */
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0) {
        if (connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
            close(probe);
            log_error("cannot open the control socket %s: another continuo is running "
                      "(`continuo ctl status`)", path);
            return -1;
        }
        int err = errno;
        close(probe);
        if (err == ECONNREFUSED) {
            struct stat st;
            if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
                log_info("removing stale control socket %s", path);
                unlink(path);
            }
        }
    }
    cs->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (cs->fd < 0) {
        log_error("cannot open the control socket %s: socket: %s", path, strerror(errno));
        return -1;
    }
    mode_t old = umask(0177);   /* the socket is born 0600: no window for others */
    int r = bind(cs->fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (r < 0 || chmod(path, 0600) < 0 || listen(cs->fd, 8) < 0) {
        log_error("cannot open the control socket %s: %s", path, strerror(errno));
        close(cs->fd);
        cs->fd = -1;
        return -1;
    }
    snprintf(cs->path, sizeof cs->path, "%s", path);
    return 0;
}

static void drop_client(control_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    c->out = NULL;
    c->fd = -1;
    c->n_in = c->n_out = 0;
    c->closing = 0;
    c->watching = 0;
    c->frames_dropped = c->unreported = 0;
}

void control_close(control_server *cs)
{
    for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
        drop_client(&cs->clients[i]);
    if (cs->fd >= 0) {
        close(cs->fd);
        unlink(cs->path);
    }
    cs->fd = -1;
}

int control_poll_fds(const control_server *cs, struct pollfd *fds, int max)
{
    int n = 0;
    if (cs->fd < 0 || max < 1)
        return 0;
    fds[n++] = (struct pollfd){ cs->fd, POLLIN, 0 };
    for (int i = 0; i < CONTROL_MAX_CLIENTS && n < max; i++) {
        const control_client *c = &cs->clients[i];
        if (c->fd >= 0)
            fds[n++] = (struct pollfd){ c->fd, (short)((c->closing ? 0 : POLLIN) |
                                                      (c->n_out ? POLLOUT : 0)), 0 };
    }
    return n;
}

/* Queues TEXT + '\n'; returns -1 (client to drop) when it does not fit. */
static int queue_reply(control_client *c, const char *text)
{
    size_t n = strlen(text);
    if (c->n_out + n + 1 > CONTROL_OUT_MAX)
        return -1;
    memcpy(c->out + c->n_out, text, n);
    c->out[c->n_out + n] = '\n';
    c->n_out += n + 1;
    return 0;
}

/* "{"type":"dropped",...}" into C's queue: its frames lost since the last
 * one it got.  -1 when there is no room for it yet: after a loss, frames
 * wait until the reader has taken half of its queue. */
static int queue_dropped(control_client *c, size_t room_after)
{
    if (c->n_out > CONTROL_FRAMES_MAX / 2)
        return -1;
    char note[96];
    int m = snprintf(note, sizeof note, "{\"type\":\"dropped\",\"frames\":%lu,\"total\":%lu}", c->unreported,
                     c->frames_dropped);
    if (c->n_out + (size_t)m + 1 + room_after > CONTROL_FRAMES_MAX)
        return -1;
    queue_reply(c, note);
    c->unreported = 0;
    return 0;
}

static void flush_out(control_server *cs, control_client *c)
{
    while (c->n_out > 0) {
        ssize_t w = send(c->fd, c->out, c->n_out, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            drop_client(c);
            return;
        }
        memmove(c->out, c->out + w, c->n_out - (size_t)w);
        c->n_out -= (size_t)w;
        if (c->n_out == 0 && c->unreported)
            queue_dropped(c, 0);    /* all taken: say what was lost */
    }
    if (c->closing) {
        drop_client(c);
        (void)cs;
    }
}

/* A misbehaving client: one error line if it fits, then it goes. */
static int reject(control_server *cs, control_client *c, const char *why)
{
    cs->dropped++;
    c->n_in = 0;
    if (queue_reply(c, why) < 0)
        return CONTROL_DROP;
    c->closing = 1;
    return CONTROL_CLOSING;
}

int control_feed(control_server *cs, control_client *c, const char *data, size_t n,
                 control_handler fn, void *user)
{
    char reply[CONTROL_REPLY_MAX];
    if (c->closing)
        return CONTROL_CLOSING;
    while (n > 0) {
        size_t take = sizeof c->in - c->n_in;
        if (take > n)
            take = n;
        for (size_t i = 0; i < take; i++) {
            unsigned char b = (unsigned char)data[i];
            if ((b < 0x20 && b != '\n' && b != '\r' && b != '\t') || b == 0x7F)
                return reject(cs, c, "error binary data on the control socket; closing");
        }
        memcpy(c->in + c->n_in, data, take);
        c->n_in += take;
        data += take;
        n -= take;
        /* Handle every complete line. */
        size_t pos = 0;
        char *nl;
        while ((nl = memchr(c->in + pos, '\n', c->n_in - pos))) {
            *nl = '\0';
            char *line = c->in + pos;
            size_t len = (size_t)(nl - line);
            if (len > 0 && line[len - 1] == '\r')
                line[--len] = '\0';
            pos = (size_t)(nl - c->in) + 1;
            if (len == 0)
                continue;
            cs->current = c;
            cs->hello[0] = '\0';
            fn(user, line, reply, sizeof reply);
            cs->current = NULL;
            if (queue_reply(c, reply) < 0 || (cs->hello[0] && queue_reply(c, cs->hello) < 0)) {
                cs->dropped++;      /* it does not read: drop it */
                return CONTROL_DROP;
            }
        }
        memmove(c->in, c->in + pos, c->n_in - pos);
        c->n_in -= pos;
        if (c->n_in == sizeof c->in)
            return reject(cs, c, "error line too long; closing");
    }
    return CONTROL_OK;
}

static void read_client(control_server *cs, control_client *c, control_handler fn, void *user)
{
    char buf[CONTROL_LINE_MAX];
    for (int rounds = 0; rounds < 8 && c->fd >= 0 && !c->closing; rounds++) {   /* fair to the others */
        ssize_t r = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0) {
            drop_client(c);
            return;
        }
        if (r < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                drop_client(c);
            return;
        }
        if (control_feed(cs, c, buf, (size_t)r, fn, user) == CONTROL_DROP) {
            drop_client(c);
            return;
        }
        flush_out(cs, c);
    }
}

int control_client_init(control_client *c, int fd)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->out = malloc(CONTROL_OUT_MAX);
    if (!c->out)
        return -1;
    c->fd = fd;
    return 0;
}

void control_client_free(control_client *c)
{
    drop_client(c);
}

static void accept_clients(control_server *cs)
{
    for (;;) {
        int fd = accept(cs->fd, NULL, NULL);
        if (fd < 0)
            return;
        if (set_nonblock(fd) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
            close(fd);
            continue;
        }
        control_client *slot = NULL;
        for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
            if (cs->clients[i].fd < 0) {
                slot = &cs->clients[i];
                break;
            }
        if (!slot || control_client_init(slot, fd) < 0) {
            static const char busy[] = "error too many clients\n";
            ssize_t w = send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)w;
            close(fd);
            continue;
        }
    }
}

void control_dispatch(control_server *cs, const struct pollfd *fds, int n,
                      control_handler fn, void *user)
{
    for (int k = 0; k < n; k++) {
        if (!fds[k].revents)
            continue;
        if (fds[k].fd == cs->fd) {
            accept_clients(cs);
            continue;
        }
        for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
            control_client *c = &cs->clients[i];
            if (c->fd != fds[k].fd)
                continue;
            if (fds[k].revents & POLLOUT)
                flush_out(cs, c);
            if (c->fd >= 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
                read_client(cs, c, fn, user);
            break;
        }
    }
}

int control_watchers(control_server *cs)
{
    int n = 0;
    for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
        n += cs->clients[i].fd >= 0 && cs->clients[i].watching && !cs->clients[i].closing;
    return cs->watchers = n;
}

/* FRAME into C's queue when it fits under CONTROL_FRAMES_MAX (after the
 * count of the frames lost before it, queue_dropped), else counted as lost. */
static void queue_frame(control_client *c, const char *frame, size_t n)
{
    if ((c->unreported && queue_dropped(c, n + 1) < 0) || c->n_out + n + 1 > CONTROL_FRAMES_MAX) {
        c->frames_dropped++;
        c->unreported++;
        return;
    }
    queue_reply(c, frame);
}

void control_broadcast(control_server *cs, const char *frame)
{
    size_t n = strlen(frame);
    for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
        control_client *c = &cs->clients[i];
        if (c->fd < 0 || !c->watching || c->closing)
            continue;
        queue_frame(c, frame, n);   /* sent when poll says it can take them */
    }
}

/* A socket connected to the service at PATH, or -1 (logged). */
static int connect_service(const char *path)
{
    struct sockaddr_un sa;
    if (make_addr(&sa, path) < 0) {
        log_error("cannot reach continuo at %s: path too long", path);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        log_error("cannot reach continuo at %s: %s (is `continuo serve` running?)",
                  path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Sends LINE and a newline on FD, all of it; -1 when it cannot (logged,
 * unless out of memory). */
static int send_line(int fd, const char *path, const char *line)
{
    size_t n = strlen(line);
    char *msg = malloc(n + 2);
    if (!msg)
        return -1;
    memcpy(msg, line, n);
    msg[n] = '\n';
    size_t off = 0;
    while (off < n + 1) {
        ssize_t w = send(fd, msg + off, n + 1 - off, MSG_NOSIGNAL);
        if (w < 0) {
            log_error("cannot send to continuo at %s: %s", path, strerror(errno));
            free(msg);
            return -1;
        }
        off += (size_t)w;
    }
    free(msg);
    return 0;
}

/* Reads the answer on FD into REPLY (LEN bytes, one kept for a NUL) until a
 * newline, the end of the stream or a full buffer; *GOT is how many bytes
 * came.  -1 (logged) when TIMEOUT_MS passes first. */
static int await_reply(int fd, const char *path, char *reply, size_t len, int timeout_ms,
                       size_t *got)
{
    size_t n = 0;
    double deadline = clock_now_seconds() + timeout_ms / 1000.0;
    set_nonblock(fd);
    while (n + 1 < len) {
        struct pollfd p = { fd, POLLIN, 0 };
        int left = (int)((deadline - clock_now_seconds()) * 1000.0 + 0.999);
        if (left <= 0 || poll(&p, 1, left) <= 0) {
            log_error("no answer from continuo at %s within %d ms", path, timeout_ms);
            return -1;
        }
        ssize_t r = recv(fd, reply + n, len - 1 - n, 0);
        if (r <= 0) {
            if (r < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            break;
        }
        n += (size_t)r;
        if (memchr(reply, '\n', n))
            break;
    }
    *got = n;
    return 0;
}

int control_request(const char *path, const char *line, char *reply, size_t len, int timeout_ms)
{
    int fd = connect_service(path);
    if (fd < 0)
        return -1;
    size_t got;
    if (send_line(fd, path, line) < 0 || await_reply(fd, path, reply, len, timeout_ms, &got) < 0) {
        close(fd);
        return -1;
    }
    close(fd);
    reply[got] = '\0';
    char *nl = strchr(reply, '\n');
    if (nl)
        *nl = '\0';
    if (got == 0) {
        log_error("continuo at %s closed the connection without an answer", path);
        return -1;
    }
    return 0;
}

int control_watch(const char *path, FILE *out)
{
    char buf[CONTROL_FRAME_MAX];
    int fd = connect_service(path);
    if (fd < 0)
        return -1;
    if (send_line(fd, path, "watch") < 0) {
        close(fd);
        return -1;
    }
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || fwrite(buf, 1, (size_t)r, out) != (size_t)r || fflush(out) != 0)
            break;
    }
    close(fd);
    return 0;
}
