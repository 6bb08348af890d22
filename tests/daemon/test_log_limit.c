/* test_log_limit.c: a warning that repeats with every event is written at most
 * once a second, and the next one written says how many were held back. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "util/log.h"

static int count_lines(FILE *f, char *last, size_t n)
{
    char line[1024];
    int lines = 0;
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        lines++;
        snprintf(last, n, "%s", line);
    }
    return lines;
}

int main(void)
{
    /* The rule, on an injected clock. */
    log_limit l = { 0 };
    unsigned held = 12345;
    CHECK_INT(log_limit_pass(&l, 100.0, &held), 1);        /* the first one goes out */
    CHECK_INT(held, 0);
    for (int i = 1; i < 1000; i++)
        CHECK_INT(log_limit_pass(&l, 100.0 + i * 0.0009, &held), 0);
    CHECK_INT(log_limit_pass(&l, 101.0, &held), 1);        /* a second later */
    CHECK_INT(held, 999);
    CHECK_INT(log_limit_pass(&l, 101.5, &held), 0);
    CHECK_INT(log_limit_pass(&l, 102.0, &held), 1);
    CHECK_INT(held, 1);
    CHECK_INT(log_limit_pass(&l, 500.0, &held), 1);        /* quiet for long: nothing held */
    CHECK_INT(held, 0);

    /* Through stderr, on the real clock: a burst of 5,000 gives one line. */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return CHECK_DONE();
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(f), 2);
    log_limit w = { 0 };
    for (int i = 0; i < 5000; i++)
        log_warn_limited(&w, "output ring full, event %d dropped", i);
    fflush(stderr);
    char last[1024] = "";
    int after_burst = count_lines(f, last, sizeof last);
    struct timespec ts = { 1, 50 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    log_warn_limited(&w, "output ring full, event %d dropped", 5000);
    fflush(stderr);
    int after_wait = count_lines(f, last, sizeof last);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    CHECK_INT(after_burst, 1);
    CHECK_INT(after_wait, 2);
    CHECK_STR_CONTAINS(last, "warning: output ring full, event 5000 dropped");
    CHECK_STR_CONTAINS(last, "(4999 more like it held back since the last one)");
    return CHECK_DONE();
}
