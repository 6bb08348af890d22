/* bench.c: `continuo bench` (not written yet). */
#include <stdio.h>

#include "cli/commands.h"

int cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "continuo: 'bench' is not implemented yet\n");
    return 2;
}
