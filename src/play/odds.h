/* odds.h: the odds of ids under the sampler's mask: the one masked max and exp-sum that the knobs and the scores share. */
#ifndef CONTINUO_PLAY_ODDS_H
#define CONTINUO_PLAY_ODDS_H

#include <stdint.h>

/* The largest of the N logits L that MASK (N bytes, model/sampler.h's
 * values; NULL: every id) does not forbid, or -1e30 when it forbids all. */
double odds_top(const float *l, const uint8_t *mask, int n);

/* The sum of exp(L[i] - TOP) over the ids MASK allows (TOP from odds_top,
 * or an earlier one: a sum before and after a change compare under one
 * TOP).  W (may be NULL) gets each id's term, 0 where MASK forbids it. */
double odds_exp_sum(const float *l, const uint8_t *mask, int n, double top, double *w);

/* ln of the sum of exp(L[i]) over the ids MASK allows: the normalizer of
 * the odds, for an id's log-likelihood. */
double odds_log_sum_exp(const float *l, const uint8_t *mask, int n);

#endif
