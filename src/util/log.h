/* log.h: one place that prints errors, warnings and progress notes. */
#ifndef CONTINUO_LOG_H
#define CONTINUO_LOG_H

#include <stdarg.h>

/* Messages go to stderr as "continuo: LEVEL: text" (errors say just
 * "continuo: text").  Library code logs an error once, where it is found,
 * naming the operation and the cause, then returns an error code; only main
 * decides to exit. */
typedef enum { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG } log_level;

void log_set_level(log_level max);      /* default LOG_LEVEL_INFO */
log_level log_get_level(void);
void log_msg(log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void log_vmsg(log_level level, const char *fmt, va_list ap);

/* A warning that can repeat with every event (an event dropped, a note not
 * heard) is written at most once a second from one place: the first goes
 * out, the next ones are counted, and the next one written says how many
 * were held back.  One log_limit per place, used by one thread, zeroed to
 * start. */
typedef struct {
    double next_s;          /* no message before this time */
    unsigned held;          /* messages held back since the last one written */
} log_limit;

/* 1 when a message may be written at now_s (seconds on any monotonic
 * clock), with *held the number held back before it; 0 when it is held. */
int log_limit_pass(log_limit *l, double now_s, unsigned *held);
/* log_warn through l, on CLOCK_MONOTONIC. */
void log_warn_limited(log_limit *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
