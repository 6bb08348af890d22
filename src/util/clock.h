/* clock.h: the one monotonic clock every module reads (CLOCK_MONOTONIC). */
#ifndef CONTINUO_CLOCK_H
#define CONTINUO_CLOCK_H

#include <stdint.h>

/* Both read CLOCK_MONOTONIC, the clock of the service's timerfds: it is not
 * moved when the wall clock is set.  Its zero is arbitrary, so only
 * differences and deadlines on this same clock mean anything. */
int64_t clock_now_ns(void);         /* nanoseconds */
double  clock_now_seconds(void);    /* seconds */

#endif
