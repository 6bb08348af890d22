/* value.h: a setting's value type of its own (text in, text out), for the config file and the command line alike. */
#ifndef CONTINUO_UTIL_VALUE_H
#define CONTINUO_UTIL_VALUE_H

#include <stddef.h>

/* What the option tables need of a type that is not a plain number, flag
 * or word list: `serve`'s config (options.c) and `continue`'s options
 * (cli/opts.c) parse and print it through these, so both take and give
 * back the same text ("auto", "C major").
 * parse:  TEXT into DST (SIZE bytes); 0, or -1 with why in WHY (LEN bytes:
 *         "expected ..., got 'TEXT'").
 * format: SRC as it would be written in a file, into BUF; returns BUF. */
typedef struct value_type {
    const char *what;       /* for the config file's comment and errors: "auto or 1..127" */
    size_t      size;
    int         (*parse)(const char *text, void *dst, char *why, size_t len);
    const char *(*format)(const void *src, char *buf, size_t len);
} value_type;

#endif
