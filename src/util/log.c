/* log.c: stderr logging with levels; one fprintf per message. */
#include "log.h"

#include <stdio.h>

static log_level max_level = LOG_LEVEL_INFO;

void log_set_level(log_level max) { max_level = max; }
log_level log_get_level(void) { return max_level; }

void log_vmsg(log_level level, const char *fmt, va_list ap)
{
    static const char *const prefix[] = { "", "warning: ", "", "debug: " };
    char text[1024];

    if (level > max_level)
        return;
    vsnprintf(text, sizeof text, fmt, ap);
    /* One write per line so messages from threads do not interleave. */
    fprintf(stderr, "continuo: %s%s\n", prefix[level], text);
}

void log_msg(log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, fmt, ap);
    va_end(ap);
}
