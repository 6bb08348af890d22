/* common.c: small helpers shared by the subcommands. */
#include <string.h>

#include "cli/commands.h"

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}
