/* turn.h: when the player has finished: the phrase end judged at a moment of silence from the model's odds of the player's next event and what a listener hears of the last chord. */
#ifndef CONTINUO_PLAY_TURN_H
#define CONTINUO_PLAY_TURN_H

#include <stdint.h>

#include "codec/vocab.h"

#define TURN_MAX_STEPS 128      /* time shifts a layout may have (mt310: 100) */
#define TURN_KEY_NOTES 200      /* the key is heard in this many last note-ons */

/* What a listener hears at the start of a silence (bench/turn_cues.py
 * defines them and fits their weights; docs/REALISM.md). */
enum {
    TURN_CUE_AGE,       /* log(s from the last chord's onset to the release + 0.01) */
    TURN_CUE_PACE,      /* log(mean gap of the last 8 note-ons + 0.01) */
    TURN_CUE_SIZE,      /* note-ons in the last chord (onsets within 60 ms; a ghost
                           note just after a chord passed over) */
    TURN_CUE_LOUD,      /* the chord's mean velocity / that of the last 20 note-ons */
    TURN_CUE_PEDAL,     /* 1: the pedal was the last thing lifted */
    TURN_CUE_BASS,      /* 1: the chord's lowest note is the key's tonic */
    TURN_CUE_CLARITY,   /* the key profile's correlation (Krumhansl-Kessler) */
    TURN_CUE_TRIAD,     /* 1: the chord is the tonic triad (or part of it, with the tonic) */
    TURN_CUES
};

/* The player's playing as the cues need it: fed every message heard. */
typedef struct turn_ear {
    double  on_t[TURN_KEY_NOTES];   /* the last note-ons, a ring */
    uint8_t on_p[TURN_KEY_NOTES], on_v[TURN_KEY_NOTES];
    long    n;                      /* note-ons heard */
    uint8_t down[128];
    int     held, pedal;
    double  quiet_start;            /* when nothing sounded any more; < 0: something does */
    int     pedal_last;             /* that moment was a pedal's lift */
} turn_ear;

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
    int    have_cues;                   /* the cues below were heard */
    double cues[TURN_CUES];
    int    have_probe;                  /* probe[] was read (a vocabulary the probe knows) */
    double probe[2];                    /* at each of TURN_MOMENTS_MS: the probe's weighing
                                           of the whole next-event distribution (turn.c) */
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
    int    cues;        /* 1: the cue rule (when the odds have cues): at each of
                           TURN_MOMENTS_MS the phrase has ended once the cues' and odds'
                           score passes th[] there; rest, hold, min_ms are not used */
    double th[2];
    int    probe;       /* 1: with the cue rule, when the odds have the probe, its rule
                           instead: the cues, the odds and the probe, weighed as fitted with
                           it (turn_fit.h) and passing th_probe[] */
    double th_probe[2];
    double bias;        /* added to every threshold of the cue rule and the probe's
                           (phrase_end_bias, log-odds): above 0 it waits for surer ends
                           (fewer answers into the player's pauses, later answers),
                           below 0 it answers sooner */
} turn_rule;

/* The odds' rule tuned on ASAP's train split (bench/bench_turn.c, docs/REALISM.md). */
#define TURN_REST_DEFAULT   0.6
#define TURN_HOLD_DEFAULT   0.0
#define TURN_MIN_MS_DEFAULT 100
#define TURN_HOLD_REF_S     0.5

/* The cue rule's moments; its weights and thresholds, and the probe's, are
 * play/turn_fit.h's, fitted and tuned on all of train (bench/turn_cues.py). */
#define TURN_MOMENTS_MS     { 300, 600 }

/* The cue rule with its tuned thresholds, judging until MAX_MS (bench_turn's
 * "cues alone", and auto's rule for a vocabulary the probe does not read). */
turn_rule turn_rule_cues(int max_ms);

/* phrase_end = auto: the cue rule with the probe (serve's, and bench_turn's
 * figures of it). */
turn_rule turn_rule_auto(int max_ms);

void turn_ear_reset(turn_ear *e);

/* One message of the player at T s: 1 when heard (a note-on, a note-off,
 * the sustain pedal pressed or lifted), 0 when it passes (a half-pedal's
 * values, other messages). */
int  turn_ear_hear(turn_ear *e, double t, uint8_t status, uint8_t data1, uint8_t data2);

/* The cues of the silence going on into O (have_cues 0 when nothing is
 * silent, or fewer than two note-ons were heard). */
void turn_ear_cues(const turn_ear *e, turn_odds *o);

/* The odds O of the next event from LOGITS (V's ids: raw, no mask, after
 * the model heard the release, the last id of the context), and when V is
 * the probe's vocabulary (mt310) the probe: weights on the log-probability
 * of every id, fitted with the cues on train (bench/turn_cues.py --probe). */
void turn_odds_read(turn_odds *o, const vocab *v, const float *logits);

/* The verdict: ms after the last release at which the phrase is judged
 * ended.  The cue rule (r->cues, o->have_cues): the first of
 * TURN_MOMENTS_MS before max_ms at which the weighted cues and log-odds of
 * P(at rest | no note yet) pass that moment's threshold plus r->bias; with
 * r->probe and o->have_probe, the probe's rule (the weights and thresholds
 * fitted with it).  Else the odds' rule, min_ms..max_ms: the first moment
 * at which P(at rest | no note yet) = survive[steps] / survive[that
 * moment], times the hold's factor, reaches r->rest.  Neither: r->max_ms (the silence rule decides).
 *
 * MARGIN (may be NULL): how sure the cue rule was, the most its score
 * passed a moment's threshold by (phrase_end_bias included), in log-odds;
 * > 0: the phrase was judged ended before max_ms.  A phrase_end_bias
 * raised by more than this leaves such a silence to the silence rule;
 * lowered by more than its negative, it is answered early.  NAN when the
 * cue rule does not judge (no cues, the odds' rule). */
int turn_verdict(const turn_odds *o, const turn_rule *r, double *margin);

#endif
