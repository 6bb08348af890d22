/* key_fit.c: the key that pitch class counts fit best (key_fit.h). */
#include "play/key_fit.h"

#include <math.h>

#define KEY_TIE 1e-9     /* keys that fit alike (a few classes heard): the first; bench/turn_cues.py's
                            correlations round otherwise */

static const double profiles[2][12] = {
    { 6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88 },    /* major */
    { 6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17 },    /* minor */
};

/* Pearson's correlation of HIST with PROFILE turned to tonic K; NAN when HIST is flat. */
static double correlation(const double *hist, const double *profile, int k)
{
    double mh = 0, mp = 0, sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < 12; i++) {
        mh += hist[i] / 12;
        mp += profile[i] / 12;
    }
    for (int i = 0; i < 12; i++) {
        double x = hist[i] - mh, y = profile[(i - k + 12) % 12] - mp;
        sxy += x * y;
        sxx += x * x;
        syy += y * y;
    }
    return sxx > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

double key_fit(const double hist[12], int *tonic, int *minor)
{
    double best = KEY_FIT_NONE;
    *tonic = *minor = 0;
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 12; k++) {
            double c = correlation(hist, profiles[m], k);
            if (c > best + KEY_TIE) {   /* NAN never is */
                best = c;
                *tonic = k;
                *minor = m;
            }
        }
    return best;
}
