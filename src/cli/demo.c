/* demo.c: `continuo demo` (not written yet). */
#include <stdio.h>

#include "cli/commands.h"

int cmd_demo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "continuo: 'demo' is not implemented yet\n");
    return 2;
}
