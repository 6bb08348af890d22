/* ctl.c: `continuo ctl`: one command to a running service over its control socket. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "daemon/commands.h"
#include "daemon/control.h"
#include "util/log.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: continuo ctl [--socket PATH] COMMAND\n"
        "\n"
        "commands:\n");
    control_commands_usage(fp);
    fprintf(fp,
        "\n"
        "  --socket PATH     control socket (default $XDG_RUNTIME_DIR/continuo/ctl)\n"
        "  --timeout MS      how long to wait for the answer (default 5000)\n"
        "\n"
        "Prints the service's answer; exits 0 on \"ok\", 1 on \"error\".\n");
}

int cmd_ctl(int argc, char **argv)
{
    const char *sock = NULL;
    char def[CONTROL_REPLY_MAX], line[CONTROL_LINE_MAX], reply[CONTROL_REPLY_MAX];
    char abs_path[PATH_MAX];
    int timeout = 5000, first = 0;
    size_t n = 0;

    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            sock = argv[++i];
        } else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            long v;
            if (cli_integer("ctl", "--timeout", argv[++i], 1, 3600000, &v) < 0)
                return 2;
            timeout = (int)v;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "continuo ctl: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            if (!first)
                first = i;
            const char *word = argv[i];
            /* save FILE: the service runs elsewhere: send an absolute path. */
            if (i == first + 1 && strcmp(argv[first], "save") == 0 && word[0] != '/') {
                char cwd[PATH_MAX];
                if (!getcwd(cwd, sizeof cwd) ||
                    snprintf(abs_path, sizeof abs_path, "%s/%s", cwd, word) >= (int)sizeof abs_path) {
                    fprintf(stderr, "continuo ctl: cannot make %s absolute\n", word);
                    return 1;
                }
                word = abs_path;
            }
            int w = snprintf(line + n, sizeof line - n, "%s%s", n ? " " : "", word);
            if (w < 0 || (size_t)w >= sizeof line - n) {
                fprintf(stderr, "continuo ctl: command too long\n");
                return 2;
            }
            n += (size_t)w;
        }
    }
    if (!first) {
        usage(stderr);
        return 2;
    }
    if (!sock) {
        if (control_default_path(def, sizeof def) < 0)
            return 1;
        sock = def;
    }
    if (control_request(sock, line, reply, sizeof reply, timeout) < 0)
        return 1;
    printf("%s\n", reply);
    return strncmp(reply, "ok", 2) == 0 ? 0 : 1;
}
