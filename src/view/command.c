/* command.c: what the page may ask the service for (server.h): one line of text, one of a few commands. */
#include "view/server.h"

#include <string.h>

int view_command_allowed(const char *line, size_t len)
{
    static const char *const allowed[] = { "set ", "replay", "reroll", "panic" };
    if (len == 0 || len > VIEW_COMMAND_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e)
            return 0;       /* one line of printable ASCII */
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        size_t n = strlen(allowed[i]);
        if (len < n || memcmp(line, allowed[i], n) != 0)
            continue;
        if (allowed[i][n - 1] == ' ' ? len > n : len == n || line[n] == ' ')     /* set KEY, replay [N] */
            return 1;
    }
    return 0;
}
