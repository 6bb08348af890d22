/* ctl.c: `continuo ctl`: one command to a running service over its control socket. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "daemon/commands.h"
#include "daemon/control.h"
#include "util/log.h"

static const char ctl_usage[] =
    "usage: continuo ctl [--socket PATH] COMMAND\n"
    "\n"
    "commands:\n";

/* Word I of WORDS names a file: `save`'s, `play`'s, `save-take`'s, and
 * `model`'s (but auto and the model-free engines, echo and stall). */
static int is_file_word(char **words, int i)
{
    const char *cmd = words[0], *w = words[i];
    if (i == 1 && strcmp(cmd, "model") == 0)
        return w[0] && strcmp(w, "auto") != 0 && strcmp(w, "echo") != 0 && strcmp(w, "stall") != 0;
    return (i == 1 && (strcmp(cmd, "save") == 0 || strcmp(cmd, "play") == 0))
           || (i == 2 && strcmp(cmd, "save-take") == 0);
}

/* The command's words joined into LINE (size LEN); a relative file made
 * absolute (is_file_word), since the service runs elsewhere.  0, or the
 * exit status after the message. */
static int join_words(char **words, int n_words, char *line, size_t len)
{
    char abs_path[PATH_MAX];
    size_t n = 0;
    line[0] = '\0';
    for (int i = 0; i < n_words; i++) {
        const char *word = words[i];
        if (is_file_word(words, i) && word[0] != '/') {
            char cwd[PATH_MAX];
            if (!getcwd(cwd, sizeof cwd) ||
                snprintf(abs_path, sizeof abs_path, "%s/%s", cwd, word) >= (int)sizeof abs_path) {
                fprintf(stderr, "continuo ctl: cannot make %s absolute\n", word);
                return 1;
            }
            word = abs_path;
        }
        int w = snprintf(line + n, len - n, "%s%s", n ? " " : "", word);
        if (w < 0 || (size_t)w >= len - n) {
            fprintf(stderr, "continuo ctl: command too long\n");
            return 2;
        }
        n += (size_t)w;
    }
    return 0;
}

int cmd_ctl(int argc, char **argv)
{
    const char *sock = NULL;
    char def[CONTROL_REPLY_MAX], line[CONTROL_LINE_MAX], reply[CONTROL_REPLY_MAX];
    int timeout = 5000, n_words;
    const cli_option options[] = {
        CLI_FILE("socket", 0, "PATH", &sock, "control socket (default $XDG_RUNTIME_DIR/continuo/ctl)"),
        CLI_INT("timeout", 0, "MS", 1, 3600000, &timeout, "how long to wait for the answer (default 5000)"),
        CLI_OPT_HELP,
        CLI_END
    };
    /* options first: a command's words may start with '-' (set cc_panic -1) */
    const cli_spec spec = { .name = "ctl", .usage = ctl_usage, .more_usage = control_commands_usage,
                            .options = options, .options_first = 1,
                            .epilog = "Prints the service's answer; exits 0 on \"ok\", 1 on \"error\".\n"
                                      "`watch` prints its frames, one JSON object a line, until the service stops.\n",
                            .min_operands = 1, .max_operands = CLI_MANY };
    int rc = cli_parse(&spec, argc, argv, &n_words);
    if (rc != CLI_GO_ON)
        return rc;
    if ((rc = join_words(argv + 1, n_words, line, sizeof line)) != 0)
        return rc;
    if (!sock) {
        if (control_default_path(def, sizeof def) < 0)
            return 1;
        sock = def;
    }
    if (strcmp(line, "watch") == 0)     /* the frames until the service goes (or ^C) */
        return control_watch(sock, stdout) < 0 ? 1 : 0;
    if (control_request(sock, line, reply, sizeof reply, timeout) < 0)
        return 1;
    printf("%s\n", reply);
    return strncmp(reply, "ok", 2) == 0 ? 0 : 1;
}
