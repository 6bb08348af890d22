/* continue.c: `continuo continue` (not written yet). */
#include <stdio.h>

#include "cli/commands.h"

int cmd_continue(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "continuo: 'continue' is not implemented yet\n");
    return 2;
}
