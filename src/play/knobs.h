/* knobs.h: the musical knobs (play_options.h) as arithmetic on the model's logits, given what was heard and what sounds. */
#ifndef CONTINUO_PLAY_KNOBS_H
#define CONTINUO_PLAY_KNOBS_H

#include <stdint.h>

#include "codec/follow.h"
#include "codec/perf.h"
#include "codec/vocab.h"
#include "play/play_options.h"

/* What the knobs steer by from what was heard, read once as a
 * continuation begins (knobs_begin).  Plain values: a fork copies it. */
typedef struct knobs_heard {
    unsigned char phrase[FOLLOW_RING];  /* motif: the pitches of the note-ons heard in the last
                                           FOLLOW_WINDOW_S, oldest first and, struck together,
                                           low to high */
    int           n_phrase;
    unsigned char scale[12];            /* key_lock: the pitch classes it may play */
    int           have_scale;
} knobs_heard;

/* What the knobs read at one step; every pointer is borrowed and read only. */
typedef struct knobs_view {
    const vocab         *v;
    const uint8_t       *mask;      /* (vocab) the sampler's mask: what it forbids stays
                                       out of every class's total */
    const perf_follow   *follow;    /* the last note-ons, heard and played (motif) */
    const perf_decoder  *dec;       /* what sounds and since when (release) */
    const uint8_t       *model_on;  /* (128) 1: a note the continuation struck (release) */
    const knobs_heard   *heard;
} knobs_view;

/* Notes in the order the motif measures read them: by onset and, struck
 * together, low to high (as the codec and bench/realism.py order them).
 * PITCH and AT hold N such notes; the note P struck at T, no earlier than
 * any of them, goes in at its place.  Returns N + 1. */
int  chord_order_insert(unsigned char *pitch, double *at, int n, int p, double t);

/* The scale of the major or minor key that the pitch class counts N_C fit
 * best (key_fit.h; key auto, key_lock) into SCALE: 1, or 0 when nothing
 * was counted (or every class alike). */
int  knobs_nearest_scale(const double n_c[12], unsigned char scale[12]);

/* A continuation begins at NOW (the context's time) after the note-ons in
 * F: H is read from them, and P's density and key set F's aim, pace and
 * key pull (F's strengths are already the spec's). */
void knobs_begin(knobs_heard *h, perf_follow *f, const play_settings *p, double now);

/* motif: for each pitch, how often it would go on as the phrase heard
 * went on, after a run of intervals that the last note-ons of F repeat
 * (in any transposition).  Returns 1 when some pitch counts. */
int  knobs_motif_counts(const knobs_heard *h, const perf_follow *f, float counts[128]);

/* The knobs of P on LOGITS (K->v's layout, after the codec's nudges);
 * each one computes nothing at its neutral value. */
void knobs_steer(const play_settings *p, const knobs_view *k, float *logits);

#endif
