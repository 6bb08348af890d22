/* clock.c: CLOCK_MONOTONIC in nanoseconds and in seconds. */
#include "clock.h"

#include <time.h>

static struct timespec now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts;
}

int64_t clock_now_ns(void)
{
    struct timespec ts = now();
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

double clock_now_seconds(void)
{
    struct timespec ts = now();
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
