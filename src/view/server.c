/* server.c: the view's HTTP side with libmicrohttpd: the page's files, the watch frames as server-sent events, the page's commands, behind a token on loopback (server.h). */
#include "view/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/control.h"
#include "util/log.h"

#define BODY_MAX     VIEW_COMMAND_MAX
#define FILE_MAX     (1 << 20)  /* a page file */
#define KEEPALIVE_MS 15000      /* a comment on a quiet event stream */
#define LINE_MAX_LEN 65536      /* a watch frame */

struct view_server {
    struct MHD_Daemon *d;
    view_config cfg;
    int  port;
    char token[VIEW_TOKEN_LEN + 1];
    int  stop[2];               /* a pipe: its read end becomes readable when the server stops */
    char origin[2][64];         /* the page's own: http://127.0.0.1:PORT, http://localhost:PORT */
    char host[2][64];
};

/* ------------------------------------------------------------------ replies */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type, const void *body,
                             size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; connect-src 'self'; img-src 'self' data: blob:");
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned code, const char *text)
{
    return reply(c, code, "text/plain; charset=utf-8", text, strlen(text));
}

/* ------------------------------------------------------------------ who may ask */

static int same_secret(const char *a, const char *b)
{
    size_t n = strlen(b);
    unsigned diff = a && strlen(a) == n ? 0 : 1;
    for (size_t i = 0; a && i < n && a[i]; i++)
        diff |= (unsigned)(a[i] ^ b[i]);
    return diff == 0;
}

static int one_of(const char *v, const char list[2][64])
{
    return v && (strcmp(v, list[0]) == 0 || strcmp(v, list[1]) == 0);
}

/* The token, the Host (a page of another site that resolves its name to
 * 127.0.0.1 sends its own) and the Origin (a page of another site). */
static const char *refused(const view_server *v, struct MHD_Connection *c)
{
    const char *token = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!same_secret(token, v->token))
        return "forbidden: the page's address with its token is printed by `continuo view`\n";
    if (!one_of(host, v->host))
        return "forbidden: not the page's host\n";
    if (origin && !one_of(origin, v->origin))
        return "forbidden: a request from another site\n";
    return NULL;
}

/* ------------------------------------------------------------------ the service */

static int connect_service(const char *path)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof a.sun_path)
        return -1;
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* The page's stream: one `watch` connection, its frames as events. */
typedef struct stream {
    int    fd;
    int    stop;                /* the server's stop pipe (not owned) */
    char   in[LINE_MAX_LEN];
    size_t have;
    char  *out;                 /* the next event, being sent */
    size_t out_len, out_sent;
} stream;

static void stream_free(void *cls)
{
    stream *s = cls;
    if (s->fd >= 0)
        close(s->fd);
    free(s->out);
    free(s);
}

/* The next complete line of S's input as an event (frames only: the reply
 * to `watch` is not one); 1 when one is ready, 0 when a line is wanted. */
static int next_event(stream *s)
{
    char *nl = memchr(s->in, '\n', s->have);
    if (!nl)
        return 0;
    size_t n = (size_t)(nl - s->in);
    int frame = n > 0 && s->in[0] == '{';
    if (frame) {
        free(s->out);
        s->out = malloc(n + 8);
        if (s->out) {
            memcpy(s->out, "data: ", 6);
            memcpy(s->out + 6, s->in, n);
            memcpy(s->out + 6 + n, "\n\n", 2);
            s->out_len = n + 8;
            s->out_sent = 0;
        }
    }
    memmove(s->in, nl + 1, s->have - n - 1);
    s->have -= n + 1;
    return frame && s->out;
}

/* Reads the service until an event is ready; a comment when it is quiet.
 * 0, or -1 when it closed. */
static int fill_event(stream *s)
{
    while (!next_event(s)) {
        if (s->have == sizeof s->in)
            s->have = 0;                    /* a frame too long to pass on: dropped */
        struct pollfd p[2] = { { s->fd, POLLIN, 0 }, { s->stop, POLLIN, 0 } };
        int r = poll(p, 2, KEEPALIVE_MS);
        if (r > 0 && p[1].revents)
            return -1;                      /* the server stops */
        if (r == 0) {
            free(s->out);
            s->out = strdup(": quiet\n\n");
            s->out_len = s->out ? strlen(s->out) : 0;
            s->out_sent = 0;
            return s->out ? 0 : -1;
        }
        ssize_t got = r > 0 ? read(s->fd, s->in + s->have, sizeof s->in - s->have) : -1;
        if (got <= 0 && !(got < 0 && errno == EINTR))
            return -1;
        if (got > 0)
            s->have += (size_t)got;
    }
    return 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream *s = cls;
    if ((!s->out || s->out_sent == s->out_len) && fill_event(s) < 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = s->out_len - s->out_sent < max ? s->out_len - s->out_sent : max;
    memcpy(buf, s->out + s->out_sent, n);
    s->out_sent += n;
    return (ssize_t)n;
}

static enum MHD_Result serve_events(view_server *v, struct MHD_Connection *c)
{
    stream *s = calloc(1, sizeof *s);
    if (!s)
        return reply_text(c, 500, "out of memory\n");
    s->stop = v->stop[0];
    s->fd = connect_service(v->cfg.socket);
    if (s->fd < 0 || write(s->fd, "watch\n", 6) != 6) {
        stream_free(s);
        return reply_text(c, 502, "the service is not running (its control socket does not answer)\n");
    }
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s,
                                                               stream_free);
    if (!r) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result rc = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return rc;
}

/* `status` and `takes`, as two lines of text. */
static enum MHD_Result serve_status(view_server *v, struct MHD_Connection *c)
{
    char st[CONTROL_REPLY_MAX], tk[CONTROL_REPLY_MAX], out[2 * CONTROL_REPLY_MAX + 2];
    if (control_request(v->cfg.socket, "status", st, sizeof st, 2000) < 0
        || control_request(v->cfg.socket, "takes", tk, sizeof tk, 2000) < 0)
        return reply_text(c, 502, "the service is not running (its control socket does not answer)\n");
    int n = snprintf(out, sizeof out, "%s\n%s\n", st, tk);
    return reply(c, 200, "text/plain; charset=utf-8", out, (size_t)n < sizeof out ? (size_t)n : sizeof out - 1);
}

/* ------------------------------------------------------------------ POST /cmd */

typedef struct body {
    char   buf[BODY_MAX + 1];
    size_t len;
    int    too_long;
} body;

static enum MHD_Result serve_command(view_server *v, struct MHD_Connection *c, const body *b)
{
    char reply_line[CONTROL_REPLY_MAX];
    if (b->too_long)
        return reply_text(c, 413, "error a command is one line of at most 1024 bytes\n");
    if (!view_command_allowed(b->buf, b->len))
        return reply_text(c, 400, "error the page may send set, replay, reroll or panic, one line of text\n");
    if (control_request(v->cfg.socket, b->buf, reply_line, sizeof reply_line, 5000) < 0)
        return reply_text(c, 502, "the service is not running (its control socket does not answer)\n");
    return reply_text(c, strncmp(reply_line, "ok", 2) == 0 ? 200 : 400, reply_line);
}

/* ------------------------------------------------------------------ the page */

static const struct { const char *url, *file, *type; } page_files[] = {
    { "/", "index.html", "text/html; charset=utf-8" },
    { "/index.html", "index.html", "text/html; charset=utf-8" },
    { "/view.js", "view.js", "text/javascript; charset=utf-8" },
    { "/view.css", "view.css", "text/css; charset=utf-8" },
};

/* BUF's (a string of N bytes, room for FILE_MAX) __TOKEN__ marks become
 * the token: the page's own files are asked for with it too.  Its new
 * length. */
static size_t put_token(const view_server *v, char *buf, size_t n)
{
    static const char mark[] = "__TOKEN__";
    size_t m = sizeof mark - 1, t = strlen(v->token);
    for (char *at = strstr(buf, mark); at && n - m + t < FILE_MAX; at = strstr(at + t, mark)) {
        memmove(at + t, at + m, n - (size_t)(at - buf) - m + 1);
        memcpy(at, v->token, t);
        n = n - m + t;
    }
    return n;
}

static enum MHD_Result serve_file(view_server *v, struct MHD_Connection *c, const char *file, const char *type)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", v->cfg.page_dir, file);
    FILE *fp = fopen(path, "rb");
    char *buf = malloc(FILE_MAX);
    size_t n = fp && buf ? fread(buf, 1, FILE_MAX / 2, fp) : 0;
    int bad = !fp || !buf || ferror(fp);
    if (!bad && strcmp(file, "index.html") == 0) {
        buf[n] = '\0';
        n = put_token(v, buf, n);
    }
    if (fp)
        fclose(fp);
    enum MHD_Result rc = bad ? reply_text(c, 500, "the page's files are missing (see `continuo view --help`)\n")
                             : reply(c, 200, type, buf, n);
    if (bad)
        log_error("view: cannot read %s", path);
    free(buf);
    return rc;
}

static enum MHD_Result route_get(view_server *v, struct MHD_Connection *c, const char *url)
{
    if (strcmp(url, "/events") == 0)
        return serve_events(v, c);
    if (strcmp(url, "/status") == 0)
        return serve_status(v, c);
    for (size_t i = 0; i < sizeof page_files / sizeof page_files[0]; i++)
        if (strcmp(url, page_files[i].url) == 0)
            return serve_file(v, c, page_files[i].file, page_files[i].type);
    return reply_text(c, 404, "not found\n");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    view_server *v = cls;
    int post = strcmp(method, "POST") == 0;
    if (post && *con_cls == NULL) {         /* the first call: the headers only */
        body *b = calloc(1, sizeof *b);
        *con_cls = b;
        return b ? MHD_YES : MHD_NO;
    }
    if (post && *upload_size) {
        body *b = *con_cls;
        size_t n = *upload_size;
        if (b->len + n > BODY_MAX) {
            b->too_long = 1;
        } else {
            memcpy(b->buf + b->len, upload, n);
            b->len += n;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    const char *why = refused(v, c);
    if (why)
        return reply_text(c, 403, why);
    if (post) {
        body *b = *con_cls;
        while (b->len > 0 && (b->buf[b->len - 1] == '\n' || b->buf[b->len - 1] == '\r'))
            b->len--;
        b->buf[b->len] = '\0';
        return strcmp(url, "/cmd") == 0 ? serve_command(v, c, b) : reply_text(c, 404, "not found\n");
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply_text(c, 405, "method not allowed\n");
    return route_get(v, c, url);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)c;
    (void)why;
    free(*con_cls);
    *con_cls = NULL;
}

/* ------------------------------------------------------------------ start and stop */

static int make_token(char *out)
{
    unsigned char raw[VIEW_TOKEN_LEN / 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return -1;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

view_server *view_server_start(const view_config *cfg)
{
    view_server *v = calloc(1, sizeof *v);
    if (!v || make_token(v->token) < 0) {
        log_error("view: cannot make a token: %s", strerror(errno));
        free(v);
        return NULL;
    }
    v->cfg = *cfg;
    if (pipe(v->stop) != 0 || fcntl(v->stop[0], F_SETFD, FD_CLOEXEC) < 0
        || fcntl(v->stop[1], F_SETFD, FD_CLOEXEC) < 0) {
        log_error("view: cannot make a pipe: %s", strerror(errno));
        free(v);
        return NULL;
    }
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    v->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, (uint16_t)cfg->port,
                            NULL, NULL, on_request, v, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
                            MHD_OPTION_NOTIFY_COMPLETED, on_done, v, MHD_OPTION_CONNECTION_LIMIT, 32u,
                            MHD_OPTION_END);
    if (!v->d) {
        log_error("view: cannot listen on 127.0.0.1:%d: %s", cfg->port, strerror(errno));
        close(v->stop[0]);
        close(v->stop[1]);
        free(v);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(v->d, MHD_DAEMON_INFO_BIND_PORT);
    v->port = info ? info->port : cfg->port;
    snprintf(v->origin[0], sizeof v->origin[0], "http://127.0.0.1:%d", v->port);
    snprintf(v->origin[1], sizeof v->origin[1], "http://localhost:%d", v->port);
    snprintf(v->host[0], sizeof v->host[0], "127.0.0.1:%d", v->port);
    snprintf(v->host[1], sizeof v->host[1], "localhost:%d", v->port);
    return v;
}

int view_server_port(const view_server *v)
{
    return v->port;
}

const char *view_server_token(const view_server *v)
{
    return v->token;
}

void view_server_stop(view_server *v)
{
    if (!v)
        return;
    close(v->stop[1]);          /* every event stream's poll wakes and ends */
    MHD_stop_daemon(v->d);
    close(v->stop[0]);
    free(v);
}
