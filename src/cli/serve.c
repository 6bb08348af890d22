/* serve.c: `continuo serve`: read the config, then run the service loop. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "daemon/options.h"
#include "daemon/loop.h"
#include "io/midi_port.h"
#include "util/log.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: continuo serve [--config FILE] [--set KEY=VALUE ...] [options]\n"
        "\n"
        "Listens to MIDI input and answers each phrase with a continuation\n"
        "from the model (see continuo(1) and config/continuo.conf).\n"
        "\n"
        "  --config FILE     settings (default: the XDG places, else built-in)\n"
        "  --set KEY=VALUE   override one setting (repeatable)\n"
        "  --check           read the config, report problems, and exit\n"
        "  --dump-config     print the documented default config and exit\n"
        "  --list-ports      print the MIDI ports each backend can see and exit\n"
        "  -v, --verbose     log more\n");
}

static void print_port(const midi_port_info *info, void *user)
{
    (void)user;
    printf("%-28s %-3s%-4s %s\n", info->spec, info->dirs & MIDI_IN ? "in" : "",
           info->dirs & MIDI_OUT ? " out" : "", info->description);
}

int cmd_serve(int argc, char **argv)
{
    config cfg;
    char found[CONFIG_STR_MAX];
    const char *path = NULL;
    int check_only = 0, n_sets = 0;
    char *sets[256];

    config_defaults(&cfg);
    /* First pass: the config file, so --set overrides it whatever the order. */
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--dump-config") == 0) {
            config_write_doc(stdout);
            return 0;
        } else if (strcmp(argv[i], "--list-ports") == 0) {
            return midi_port_list(print_port, NULL) < 0 ? 1 : 0;
        } else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
            i++;
        } else if (strcmp(argv[i], "--check") == 0) {
            check_only = 1;
        } else if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
            log_set_level(LOG_LEVEL_DEBUG);
        } else {
            fprintf(stderr, "continuo serve: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!path && config_find_file(found, sizeof found))
        path = found;
    if (path && config_load_file(&cfg, path) < 0)
        return 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0)
            i++;
        else if (strcmp(argv[i], "--set") == 0) {
            if (config_set_arg(&cfg, argv[++i]) < 0)
                return 2;
            if (n_sets == 256) {
                fprintf(stderr, "continuo serve: too many --set options\n");
                return 2;
            }
            sets[n_sets++] = argv[i];
        }
    }
    if (check_only) {
        printf("%s: ok\n", path ? path : "(built-in defaults)");
        return 0;
    }
    return daemon_run(&cfg, path, sets, n_sets) < 0 ? 1 : 0;
}
