/* choices.c: "a|b|c" lists of names. */
#include "choices.h"

#include <string.h>

int choice_index(const char *choices, const char *value)
{
    size_t n = strlen(value);
    int idx = 0;
    for (const char *p = choices;; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, value, n) == 0)
            return idx;
        if (!bar)
            return -1;
        p = bar + 1;
    }
}
