/* progress.c: progress bar on stderr when it is a terminal. */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

void progress_begin(progress *p, const char *label, size_t total)
{
    memset(p, 0, sizeof *p);
    p->label = label;
    p->total = total;
    p->enabled = isatty(STDERR_FILENO);
    p->start = clock_now_seconds();
    p->last_draw = 0;
}

void progress_update(progress *p, size_t done, const char *item)
{
    enum { WIDTH = 30 };
    char bar[WIDTH + 1];
    double t = clock_now_seconds();

    if (!p->enabled || (t - p->last_draw < 0.1 && done < p->total))
        return;
    p->last_draw = t;
    size_t fill = p->total ? done * WIDTH / p->total : 0;
    for (size_t i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[WIDTH] = '\0';
    fprintf(stderr, "\r\033[K%s [%s] %zu/%zu %.1f s %.40s", p->label, bar, done, p->total,
            t - p->start, item ? item : "");
    fflush(stderr);
}

void progress_end(progress *p)
{
    if (p->enabled) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}
