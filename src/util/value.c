/* value.c: the plain values' text (numbers, yes and no), read one way for the config file and the tables' defaults. */
#include "util/value.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>

int value_parse_long(const char *text, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno)
        return -1;
    *out = v;
    return 0;
}

int value_parse_double(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int value_parse_bool(const char *text, int *out)
{
    static const char *const yes[] = { "yes", "true", "on", "1" };
    static const char *const no[] = { "no", "false", "off", "0" };
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0 || strcasecmp(text, no[i]) == 0) {
            *out = strcasecmp(text, yes[i]) == 0;
            return 0;
        }
    }
    return -1;
}
