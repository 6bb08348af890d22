/* eval.c: `continuo eval` (not written yet). */
#include <stdio.h>

#include "cli/commands.h"

int cmd_eval(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "continuo: 'eval' is not implemented yet\n");
    return 2;
}
