/* log.c: stderr logging with levels; one fprintf per message. */
#include "log.h"

#include <stdio.h>

#include "clock.h"

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

int log_limit_pass(log_limit *l, double now_s, unsigned *held)
{
    if (now_s < l->next_s) {
        l->held++;
        return 0;
    }
    *held = l->held;
    l->held = 0;
    l->next_s = now_s + 1.0;
    return 1;
}

void log_warn_limited(log_limit *l, const char *fmt, ...)
{
    unsigned held;
    char text[900];
    va_list ap;

    if (!log_limit_pass(l, clock_now_seconds(), &held))
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (held)
        log_warn("%s (%u more like it held back since the last one)", text, held);
    else
        log_warn("%s", text);
}
