/* odds.c: the odds of ids under the sampler's mask: the one masked max and exp-sum that the knobs and the scores share. */
#include "play/odds.h"

#include <math.h>
#include <stddef.h>

#include "model/sampler.h"

double odds_top(const float *l, const uint8_t *mask, int n)
{
    double top = -1e30;
    for (int i = 0; i < n; i++)
        if ((!mask || mask[i] != SAMPLER_FORBIDDEN) && l[i] > top)
            top = l[i];
    return top;
}

double odds_exp_sum(const float *l, const uint8_t *mask, int n, double top, double *w)
{
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double e = !mask || mask[i] != SAMPLER_FORBIDDEN ? exp(l[i] - top) : 0;
        if (w)
            w[i] = e;
        sum += e;
    }
    return sum;
}

double odds_log_sum_exp(const float *l, const uint8_t *mask, int n)
{
    double top = odds_top(l, mask, n), sum = odds_exp_sum(l, mask, n, top, NULL);
    return sum > 0 ? top + log(sum) : top;
}
