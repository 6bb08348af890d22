/* turn.h: when the player has finished: the phrase end judged at a moment of silence from the model's odds of the player's next event. */
#ifndef CONTINUO_PLAY_TURN_H
#define CONTINUO_PLAY_TURN_H

#include "codec/vocab.h"

#define TURN_MAX_STEPS 128      /* time shifts a layout may have (mt310: 100) */

/* The model's odds of how long the silence after the player's last
 * release lasts, read from the logits of the id that comes next (the
 * model is a model of the pianist: after a cadence it expects a long
 * rest, in the middle of a run a note soon). */
typedef struct turn_odds {
    int    steps;                       /* the layout's time shifts (100) */
    int    step_ms;                     /* 10 */
    double survive[TURN_MAX_STEPS + 1]; /* [k]: P(the next note comes k steps or more after
                                           the release); [0] = 1; [steps]: a shift of the
                                           longest, or the end of the sequence (at rest) */
    double onset_age;                   /* s from the player's last note-on to the moment
                                           the odds were read; 0: not known */
} turn_odds;

/* How a phrase end is judged from the odds. */
typedef struct turn_rule {
    double rest;        /* the phrase has ended once P(at rest | the silence so far)
                           reaches this (0..1; above 1: never, the silence rule) */
    double hold;        /* how much the last note's length counts: P(at rest | the silence
                           so far) x (onset_age / TURN_HOLD_REF_S)^hold is what must reach
                           rest (a final chord is held, a breath in a run is not); 0: the
                           odds alone */
    int    min_ms;      /* never judged before this long a silence */
    int    max_ms;      /* at the latest (phrase_silence_ms): the silence rule */
} turn_rule;

/* The rule tuned on ASAP's train split (bench/bench_turn.c, docs/REALISM.md). */
#define TURN_REST_DEFAULT   0.6
#define TURN_HOLD_DEFAULT   0.0
#define TURN_MIN_MS_DEFAULT 100
#define TURN_HOLD_REF_S     0.5

/* The odds O of the next event from LOGITS (V's ids: raw, no mask, after
 * the model heard the release, the last id of the context). */
void turn_odds_read(turn_odds *o, const vocab *v, const float *logits);

/* The verdict: ms after the last release at which the phrase is judged
 * ended, min_ms..max_ms: the first moment at which P(at rest | no note
 * yet) = survive[steps] / survive[that moment], times the hold's factor,
 * reaches r->rest, else r->max_ms (not yet: the silence rule decides). */
int turn_verdict(const turn_odds *o, const turn_rule *r);

#endif
