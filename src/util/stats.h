/* stats.h: small statistics over arrays of doubles. */
#ifndef CONTINUO_STATS_H
#define CONTINUO_STATS_H

/* The median of V (N >= 1 values; the mean of the two middle ones when N
 * is even).  Sorts V in place. */
double median_in_place(double *v, int n);

#endif
