/* commands.h: the subcommands of `continuo`, one file each in src/cli/. */
#ifndef CONTINUO_COMMANDS_H
#define CONTINUO_COMMANDS_H

/* Each takes argv starting at the subcommand name (argv[0] = "encode"),
 * parses its options from its table with cli_parse (opts.h), --help
 * included, and returns the process exit status: 0 success, 1 bad input or
 * failure, 2 bad usage. */
typedef struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} command;

int cmd_encode(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_continue(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_journal(int argc, char **argv);
int cmd_adapt(int argc, char **argv);
int cmd_view(int argc, char **argv);

/* Shared by the commands: true when ARG is -h or --help. */
int cli_is_help(const char *arg);
/* True when S ends in SUFFIX and has something before it ("x.tok", not ".tok"). */
int cli_has_suffix(const char *s, const char *suffix);

#endif
