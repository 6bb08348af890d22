/* commands.h: the control commands of `continuo serve` as one table. */
#ifndef CONTINUO_DAEMON_COMMANDS_H
#define CONTINUO_DAEMON_COMMANDS_H

#include <stddef.h>
#include <stdio.h>

struct service;

/* One command.  A request line is split into the command's name, its first
 * word (ARG) and the rest of the line (REST, which may hold spaces); a
 * command takes MIN_ARGS..MAX_ARGS of those two: fewer or more get "error
 * too few (many) arguments for NAME (usage: USAGE)", and a name not in the
 * table "error unknown command 'NAME' (...)", which lists every command's
 * usage.  RUN writes one reply line, "ok ..." or "error ...", into REPLY. */
typedef struct control_command {
    const char *name;
    int         min_args, max_args;
    void      (*run)(struct service *sv, char *arg, char *rest, char *reply, size_t len);
    const char *usage;          /* "set KEY VALUE" */
    const char *help;           /* what it does, one line */
} control_command;

extern const control_command control_commands[];
extern const size_t control_n_commands;

/* Writes "  USAGE   HELP" for each command, one a line (`continuo ctl --help`). */
void control_commands_usage(FILE *fp);

#endif
