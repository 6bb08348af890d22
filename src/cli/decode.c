/* decode.c: `continuo decode` (not written yet). */
#include <stdio.h>

#include "cli/commands.h"

int cmd_decode(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "continuo: 'decode' is not implemented yet\n");
    return 2;
}
