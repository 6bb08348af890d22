/* progress.h: a one-line progress bar for long work, shown only on a terminal. */
#ifndef CONTINUO_PROGRESS_H
#define CONTINUO_PROGRESS_H

#include <stddef.h>

typedef struct progress {
    const char *label;   /* borrowed, e.g. "encoding" */
    size_t total;        /* units of work, e.g. files */
    int enabled;         /* stderr is a terminal */
    double start;        /* CLOCK_MONOTONIC seconds */
    double last_draw;
} progress;

void progress_begin(progress *p, const char *label, size_t total);
/* Redraws at most 10 times a second: "label  [=====>    ]  412/1067  3.1 s". */
void progress_update(progress *p, size_t done, const char *item);
void progress_end(progress *p);   /* clears the line */

#endif
