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
    int         spaced;     /* its text can hold a space ("C major"): quoted among
                               name=value words (`ctl status`) */
} value_type;

/* The plain values as the config file writes them, for its parser
 * (daemon/options.c) and the defaults a table writes as text
 * (play_default): 0 with the value in *OUT, or -1 (nothing written) when
 * TEXT is not one whole.
 * long:   a decimal integer ("-1", "512"); out of long's range is not one
 * double: a finite number ("0.95", "1e3")
 * bool:   yes, true, on, 1 -> 1; no, false, off, 0 -> 0 (any case) */
int value_parse_long(const char *text, long *out);
int value_parse_double(const char *text, double *out);
int value_parse_bool(const char *text, int *out);

#endif
