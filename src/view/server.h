/* server.h: `continuo view`'s side of HTTP: the page, its live stream and its commands, on loopback, behind a token. */
#ifndef CONTINUO_VIEW_SERVER_H
#define CONTINUO_VIEW_SERVER_H

#include <stddef.h>

#define VIEW_TOKEN_LEN 32       /* hex digits of the random token */

typedef struct view_server view_server;

typedef struct view_config {
    const char *socket;         /* the service's control socket */
    const char *page_dir;       /* index.html, view.js, view.css */
    int         port;           /* 0: one the kernel picks */
} view_config;

/* Serves CFG's page on 127.0.0.1 (libmicrohttpd, a thread per
 * connection).  Every request must carry ?token=TOKEN (403 otherwise); a
 * request with an Origin header that is not the page's own is refused
 * (403).  Routes: / and the page's files; /events, the service's `watch`
 * frames as server-sent events (one control connection per page); /status,
 * `status` and `takes`; POST /cmd, one line of `set`, `replay`, `reroll`
 * or `panic` sent on.  NULL on error (logged). */
view_server *view_server_start(const view_config *cfg);
/* The port it listens on, and the token. */
int         view_server_port(const view_server *v);
const char *view_server_token(const view_server *v);
void        view_server_stop(view_server *v);

#define VIEW_COMMAND_MAX 1024    /* a POSTed command line, bytes */

/* 1 when LINE (LEN bytes, a page's POST) may go on to the service: one
 * line of printable ASCII, at most VIEW_COMMAND_MAX bytes, that starts
 * with `set `, `replay`, `reroll` or `panic` (the page never saves: a
 * path is the service's, and the service is sandboxed). */
int view_command_allowed(const char *line, size_t len);

#endif
