/* opts.h: the options of a subcommand as one table (a row each): the parser, its errors and --help come from it. */
#ifndef CONTINUO_CLI_OPTS_H
#define CONTINUO_CLI_OPTS_H

#include <stdint.h>
#include <stdio.h>

#include "util/value.h"

/* What an option takes, and the type of its destination. */
typedef enum cli_kind {
    CLI_KIND_FLAG,      /* int: set to 1; no value */
    CLI_KIND_INT,       /* int: a whole number in [min, max] */
    CLI_KIND_U64,       /* uint64_t: a whole number in [min, max] (seeds) */
    CLI_KIND_DOUBLE,    /* double: a number in [min, max] */
    CLI_KIND_STRING,    /* const char *: the value as given (borrowed from argv) */
    CLI_KIND_FILE,      /* const char *: a file name, not empty (borrowed from argv) */
    CLI_KIND_ENUM,      /* int: the index of the value in choices ("a|b|c") */
    CLI_KIND_LIST,      /* cli_list: each time the option is given, its value appended */
    CLI_KIND_HELP,      /* no destination: prints the help and ends the parse (exit 0) */
    CLI_KIND_PARSED,    /* a value_type's (util/value.h): its parse writes dest */
} cli_kind;

/* The values of a repeatable option (CLI_KIND_LIST): ITEM has room for MAX,
 * the caller's storage; N counts them. */
typedef struct cli_list {
    const char **item;
    int n, max;
} cli_list;

/* One option: the single place that names, types, bounds and documents it. */
typedef struct cli_option {
    const char *name;       /* long name without the "--"; NULL ends the table */
    char        letter;     /* short name (-o), or 0 */
    cli_kind    kind;
    const char *arg;        /* the value's name in the help (FILE, N, S); NULL for flags */
    double      min, max;   /* INT, U64, DOUBLE: inclusive bounds */
    const char *choices;    /* ENUM: "a|b|c" */
    void       *dest;       /* where the value goes (type: see cli_kind); borrowed */
    const char *help;       /* one or more lines, '\n'-separated */
    const value_type *vtype; /* PARSED: how its value is read */
} cli_option;

/* A subcommand's syntax: its usage text, its option table, its operands. */
typedef struct cli_spec {
    const char       *name;     /* the subcommand, for messages: "continuo NAME: ..." */
    const char       *usage;    /* printed before the options: "usage: ..." lines, description */
    void (*more_usage)(FILE *fp); /* writes what follows USAGE, before the options (ctl: the
                                     commands, from the service's table), or NULL */
    const char       *epilog;   /* printed after the options, or NULL */
    const cli_option *options;  /* ends with CLI_END */
    int options_first;          /* 1: options end at the first operand (ctl: its words may
                                   start with '-'); 0: options and operands mix */
    int min_operands;           /* fewer: the usage on stderr, exit 2 */
    int max_operands;           /* more: "unknown argument", exit 2; CLI_MANY: no limit */
} cli_spec;

#define CLI_MANY 0x7fffffff

/* Rows, one macro per kind; CLI_PTR makes the compiler check the
 * destination's type against the kind. */
#define CLI_PTR(type, p) ((void *)(1 ? (p) : (type *)0))
#define CLI_FLAG(NAME, LETTER, DST, HELP) \
    { .name = NAME, .letter = LETTER, .kind = CLI_KIND_FLAG, .dest = CLI_PTR(int, DST), .help = HELP }
#define CLI_INT(NAME, LETTER, ARG, LO, HI, DST, HELP)                                                   \
    { .name = NAME, .letter = LETTER, .kind = CLI_KIND_INT, .arg = ARG, .min = LO, .max = HI,        \
      .dest = CLI_PTR(int, DST), .help = HELP }
#define CLI_U64(NAME, LETTER, ARG, LO, HI, DST, HELP)                                                   \
    { .name = NAME, .letter = LETTER, .kind = CLI_KIND_U64, .arg = ARG, .min = LO, .max = HI,        \
      .dest = CLI_PTR(uint64_t, DST), .help = HELP }
#define CLI_DOUBLE(NAME, LETTER, ARG, LO, HI, DST, HELP)                                                \
    { .name = NAME, .letter = LETTER, .kind = CLI_KIND_DOUBLE, .arg = ARG, .min = LO, .max = HI,     \
      .dest = CLI_PTR(double, DST), .help = HELP }
#define CLI_STRING(NAME, LETTER, ARG, DST, HELP)                                                        \
    { .name = NAME, .letter = LETTER, .kind = CLI_KIND_STRING, .arg = ARG,                           \
      .dest = CLI_PTR(const char *, DST), .help = HELP }
#define CLI_FILE(NAME, LETTER, ARG, DST, HELP)                                                          \
    { .name = NAME, .letter = LETTER, .kind = CLI_KIND_FILE, .arg = ARG,                             \
      .dest = CLI_PTR(const char *, DST), .help = HELP }
#define CLI_ENUM(NAME, LETTER, ARG, CHOICES, DST, HELP)                                                 \
    { .name = NAME, .letter = LETTER, .kind = CLI_KIND_ENUM, .arg = ARG, .choices = CHOICES,         \
      .dest = CLI_PTR(int, DST), .help = HELP }
#define CLI_LIST(NAME, LETTER, ARG, DST, HELP)                                                          \
    { .name = NAME, .letter = LETTER, .kind = CLI_KIND_LIST, .arg = ARG,                             \
      .dest = CLI_PTR(cli_list, DST), .help = HELP }
#define CLI_PARSED(NAME, LETTER, ARG, VTYPE, DST, HELP)                                                 \
    { .name = NAME, .letter = LETTER, .kind = CLI_KIND_PARSED, .arg = ARG, .dest = DST, .help = HELP, \
      .vtype = VTYPE }
#define CLI_END { .name = NULL, .kind = CLI_KIND_FLAG }

/* The options several subcommands share, written once. */
#define CLI_OPT_HELP { .name = "help", .letter = 'h', .kind = CLI_KIND_HELP, .help = "this help" }
#define CLI_OPT_MODEL(dst) \
    CLI_STRING("model", 0, "FILE", dst, "model file (default: $CONTINUO_MODEL, the installed default\n" \
               "model, ./models/continuo-default.gguf)")
#define CLI_OPT_THREADS(dst) CLI_INT("threads", 0, "N", 1, 64, dst, "threads (default 2)")
/* --memory window|stream into an int holding a model_memory (0 window, 1 stream). */
#define CLI_OPT_MEMORY(dst, help) CLI_ENUM("memory", 0, "window|stream", "window|stream", dst, help)
#define CLI_OPT_QUIET(dst) CLI_FLAG("quiet", 'q', dst, "no summary line")
#define CLI_OPT_CONFIG(dst) \
    CLI_FILE("config", 0, "FILE", dst, "settings (default: the XDG places, else built-in)")
#define CLI_OPT_SET(dst) CLI_LIST("set", 0, "KEY=VALUE", dst, "override one setting (repeatable)")

/* What cli_parse returns when the command goes on (else its exit status). */
#define CLI_GO_ON (-1)

/* Parses ARGV (ARGV[0] is the subcommand's name) against SPEC: each option's
 * value into its destination; the operands moved, in order, to ARGV[1] ..
 * ARGV[*N_OPERANDS].  "--" ends the options; "-" is an operand; a long
 * option takes its value as the next argument or after '=' (--seed=3).
 * Returns CLI_GO_ON; or 0 after printing the help to stdout (--help); or 2
 * after printing to stderr "continuo NAME: " and what is wrong, naming the
 * option and the bad value (unknown option, missing value, a number out of
 * range, a value not among the choices), or the first operand past
 * SPEC->max_operands; or 2 after printing the usage to stderr when there
 * are fewer than SPEC->min_operands. */
int cli_parse(const cli_spec *spec, int argc, char **argv, int *n_operands);

/* Writes the help: SPEC's usage (and more_usage), its options with their
 * help in two columns, its epilog. */
void cli_usage(const cli_spec *spec, FILE *fp);

#endif
