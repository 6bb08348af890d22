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

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
