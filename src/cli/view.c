/* view.c: `continuo view`: a local page that shows what the running service hears, plays and listens to (src/view/server.c). */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "daemon/control.h"
#include "util/datafile.h"
#include "util/log.h"
#include "view/server.h"

#if HAVE_VIEW

static const char view_usage[] =
    "usage: continuo view [--port N] [--open] [--socket PATH]\n"
    "Serves one page on 127.0.0.1 that shows the running service live: the\n"
    "player's notes and the model's on a scrolling piano roll, for each note\n"
    "the model plays lines to the earlier notes its attention heads look at\n"
    "most (one colour a head), the knobs as controls, the takes, the sync\n"
    "state and the latency.  Prints the page's address with a random token:\n"
    "only that address is answered (403 otherwise), only from this machine.\n"
    "The service opens no network socket for it: this process connects to\n"
    "its control socket.  Stop with Ctrl-C.\n";

/* The page's files: $CONTINUO_DATADIR/view (a data folder, or a source
 * tree's data/view), the installed ones, the source tree beside the
 * binary. */
static const datafile page_index = {
    .name = "view/index.html", .env = "CONTINUO_DATADIR", .env_kind = DATAFILE_ENV_DATA_DIR,
    .source_dir = "data", .installed = 1, .beside_binary = 1,
};

static int find_page_dir(char *dir, size_t len)
{
    char places[DATAFILE_MAX_PLACES][DATAFILE_PATH_MAX];
    if (datafile_find(&page_index, dir, len) == 0) {
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        return 0;
    }
    int n = datafile_places(&page_index, places);
    fprintf(stderr, "continuo view: the page's files are not installed; looked for index.html in:\n");
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  %s\n", places[i]);
    return -1;
}

/* The page in the user's browser (--open): xdg-open, not waited for. */
static void open_page(const char *url)
{
    pid_t pid = fork();
    if (pid == 0) {
        execlp("xdg-open", "xdg-open", url, (char *)NULL);
        _exit(127);
    }
    if (pid < 0)
        fprintf(stderr, "continuo view: cannot start xdg-open; open %s yourself\n", url);
}

/* Until SIGINT or SIGTERM. */
static void wait_for_stop(void)
{
    sigset_t set;
    int sig;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigwait(&set, &sig);
}

int cmd_view(int argc, char **argv)
{
    const char *sock = NULL;
    char def[CONTROL_REPLY_MAX], dir[DATAFILE_PATH_MAX], probe[CONTROL_REPLY_MAX];
    int port = 0, open = 0, n_operands = 0;
    const cli_option options[] = {
        CLI_INT("port", 0, "N", 0, 65535, &port, "port on 127.0.0.1 (default 0: a free one)"),
        CLI_FLAG("open", 0, &open, "open the page with xdg-open"),
        CLI_FILE("socket", 0, "PATH", &sock, "the service's control socket (default $XDG_RUNTIME_DIR/continuo/ctl)"),
        CLI_OPT_HELP,
        CLI_END
    };
    const cli_spec spec = { .name = "view", .usage = view_usage, .options = options };
    int rc = cli_parse(&spec, argc, argv, &n_operands);
    if (rc != CLI_GO_ON)
        return rc;
    if (!sock) {
        if (control_default_path(def, sizeof def) < 0)
            return 1;
        sock = def;
    }
    if (find_page_dir(dir, sizeof dir) < 0)
        return 1;
    if (control_request(sock, "status", probe, sizeof probe, 2000) < 0)
        fprintf(stderr, "continuo view: no service answers at %s yet; the page waits for it\n", sock);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);     /* before the server's threads start */
    signal(SIGPIPE, SIG_IGN);
    view_config cfg = { .socket = sock, .page_dir = dir, .port = port };
    view_server *v = view_server_start(&cfg);
    if (!v)
        return 1;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/?token=%s", view_server_port(v), view_server_token(v));
    printf("%s\n", url);
    fflush(stdout);
    if (open)
        open_page(url);
    wait_for_stop();
    view_server_stop(v);
    return 0;
}

#else
int cmd_view(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "continuo view: this continuo was built without the view (meson -Dview=enabled, with "
            "libmicrohttpd-dev)\n");
    return 1;
}
#endif
