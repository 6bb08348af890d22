/* inspect.c: `continuo inspect` (not written yet). */
#include <stdio.h>

#include "cli/commands.h"

int cmd_inspect(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "continuo: 'inspect' is not implemented yet\n");
    return 2;
}
