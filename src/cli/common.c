/* common.c: small helpers shared by the subcommands: help flags, numeric options, the memory mode, file name suffixes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "model/model.h"

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

int cli_number(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || errno || !(v >= lo && v <= hi)) {
        fprintf(stderr, "continuo %s: %s wants a number in %g..%g, not '%s'\n", cmd, opt, lo, hi,
                s ? s : "(nothing)");
        return -1;
    }
    *out = v;
    return 0;
}

int cli_integer(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "continuo %s: %s wants a whole number in %ld..%ld, not '%s'\n", cmd, opt, lo,
                hi, s ? s : "(nothing)");
        return -1;
    }
    *out = v;
    return 0;
}

int cli_memory(const char *cmd, const char *s, int *out)
{
    model_memory mem;
    if (!s || model_memory_parse(s, &mem) != 0) {
        fprintf(stderr, "continuo %s: --memory wants window (a full context slides: its last 3/4 "
                "prefilled again) or stream (a rolling cache: each event overwrites the oldest), "
                "not '%s'\n", cmd, s ? s : "(nothing)");
        return -1;
    }
    *out = (int)mem;
    return 0;
}
