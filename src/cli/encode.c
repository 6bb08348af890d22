/* encode.c: `continuo encode` (not written yet). */
#include <stdio.h>

#include "cli/commands.h"

int cmd_encode(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "continuo: 'encode' is not implemented yet\n");
    return 2;
}
