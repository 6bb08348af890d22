/* serve.c: `continuo serve` (not written yet). */
#include <stdio.h>

#include "cli/commands.h"

int cmd_serve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "continuo: 'serve' is not implemented yet\n");
    return 2;
}
