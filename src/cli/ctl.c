/* ctl.c: `continuo ctl` (not written yet). */
#include <stdio.h>

#include "cli/commands.h"

int cmd_ctl(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "continuo: 'ctl' is not implemented yet\n");
    return 2;
}
