/* serve.c: `continuo serve`: read the config, then run the service loop. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "daemon/options.h"
#include "daemon/loop.h"
#include "io/midi_port.h"
#include "util/log.h"

static const char serve_usage[] =
    "usage: continuo serve [--config FILE] [--set KEY=VALUE ...] [options]\n"
    "\n"
    "Listens to MIDI input and answers each phrase with a continuation\n"
    "from the model (see continuo(1) and config/continuo.conf).\n";

#define MAX_SETS 256

/* What the command line asks for. */
typedef struct serve_args {
    const char *path;                   /* --config */
    const char *set_item[MAX_SETS];
    cli_list sets;                      /* --set KEY=VALUE, in order */
    int check_only, dump_config, list_ports, verbose;
} serve_args;

/* The options into A; CLI_GO_ON, or the exit status. */
static int parse_args(int argc, char **argv, serve_args *a)
{
    memset(a, 0, sizeof *a);
    a->sets = (cli_list){ a->set_item, 0, MAX_SETS };
    const cli_option options[] = {
        CLI_OPT_CONFIG(&a->path),
        CLI_OPT_SET(&a->sets),
        CLI_FLAG("check", 0, &a->check_only, "read the config, report problems, and exit"),
        CLI_FLAG("dump-config", 0, &a->dump_config, "print the documented default config and exit"),
        CLI_FLAG("list-ports", 0, &a->list_ports, "print the MIDI ports each backend can see and exit"),
        CLI_FLAG("verbose", 'v', &a->verbose, "log more"),
        CLI_OPT_HELP,
        CLI_END
    };
    const cli_spec spec = { .name = "serve", .usage = serve_usage, .options = options };
    int n_in;
    return cli_parse(&spec, argc, argv, &n_in);
}

static void print_port(const midi_port_info *info, void *user)
{
    (void)user;
    printf("%-28s %-3s%-4s %s\n", info->spec, info->dirs & MIDI_IN ? "in" : "",
           info->dirs & MIDI_OUT ? " out" : "", info->description);
}

int cmd_serve(int argc, char **argv)
{
    serve_args a;
    config cfg;
    char found[CONFIG_STR_MAX], source[CONFIG_STR_MAX + 16], why[512];
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_GO_ON)
        return rc;
    if (a.dump_config) {
        config_write_doc(stdout);
        return 0;
    }
    if (a.list_ports)
        return midi_port_list(print_port, NULL) < 0 ? 1 : 0;
    if (a.verbose)
        log_set_level(LOG_LEVEL_DEBUG);
    /* The config file first, so --set overrides it whatever the order. */
    config_defaults(&cfg);
    if (!a.path && config_find_file(found, sizeof found))
        a.path = found;
    if (a.path && config_load_file(&cfg, a.path) < 0)
        return 1;
    for (int i = 0; i < a.sets.n; i++)
        if (config_set_arg(&cfg, a.sets.item[i]) < 0)
            return 2;
    if (config_check(&cfg, why, sizeof why) < 0) {
        log_error("%s: %s", config_source(a.path, a.sets.n, source, sizeof source), why);
        return 1;
    }
    if (a.check_only) {
        printf("%s: ok\n", a.path ? a.path : "(built-in defaults)");
        return 0;
    }
    return daemon_run(&cfg, a.path, (char *const *)a.sets.item, a.sets.n) < 0 ? 1 : 0;
}
