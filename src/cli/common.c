/* common.c: small helpers shared by the subcommands: the help flag, file name suffixes. */
#include <stdio.h>
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

/* --memory's choices (CLI_OPT_MEMORY in opts.h) are model_memory's values, in order. */
_Static_assert(MODEL_MEMORY_WINDOW == 0 && MODEL_MEMORY_STREAM == 1, "--memory window|stream");
