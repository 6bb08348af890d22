/* key_fit.h: the key that pitch class counts fit best (Krumhansl-Schmuckler: the Krumhansl-Kessler profiles, Pearson's correlation); key_lock = auto and the phrase end's cues ask it. */
#ifndef CONTINUO_PLAY_KEY_FIT_H
#define CONTINUO_PLAY_KEY_FIT_H

#define KEY_FIT_NONE (-2.0)     /* key_fit's answer when the counts say nothing */

/* The major or minor key whose profile, turned to each of the 12 tonics,
 * correlates best with HIST (counts per pitch class, C = 0): its TONIC
 * pitch class and MINOR (0 or 1); keys that fit alike (within 1e-9) go to
 * major, then to the lower tonic.  Returns the correlation (-1..1; how
 * clear the key is), or KEY_FIT_NONE with tonic 0, major, when HIST is
 * flat (nothing, or every class alike). */
double key_fit(const double hist[12], int *tonic, int *minor);

#endif
