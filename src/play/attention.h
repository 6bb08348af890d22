/* attention.h: what the model listened to when it chose a note: its last layer's attention on the earlier note-ons, captured as it plays (the drawing is the CLI's). */
#ifndef CONTINUO_PLAY_ATTENTION_H
#define CONTINUO_PLAY_ATTENTION_H

#include <stdint.h>

#include "codec/vocab.h"
#include "model/model.h"

/* The earlier note-ons the last layer attended to most when the note
 * PITCH at TIME was chosen, averaged over the heads.  Times in seconds
 * from the continuation's first note (the primer's are negative). */
#define CONT_ATTENTION_TOP 3
typedef struct cont_attention {
    double  time;
    uint8_t pitch;
    int     n;                              /* sources, most attended first */
    double  src_time[CONT_ATTENTION_TOP];
    uint8_t src_pitch[CONT_ATTENTION_TOP];
    float   weight[CONT_ATTENTION_TOP];     /* attention on the source's NOTE_ON, 0..1 */
} cont_attention;

/* A's sources for the note-on PITCH about to be handed out at NOW: from
 * the last decode of S (its probabilities in S->scores are the ones whose
 * output chose the note), walked back through HIST (N_HIST ids of layout
 * V, the ids of S's cache, newest last).  Returns 1, or 0 when S has
 * decoded nothing. */
int attention_of_note(cont_attention *a, const model_state *s, const vocab *v, const int *hist, int n_hist, double now,
                      int pitch);

/* Per head, for `serve`'s watchers (docs/WATCH.md): the earlier note-ons
 * (the player's and the model's, by their tags: context.h) that each head
 * of the last layer attended to most when the note-on NOTE was chosen.
 * The first NOTE_ATTENTION_HEADS heads of a model with more. */
#define NOTE_ATTENTION_HEADS 16
#define NOTE_ATTENTION_TOP   3
typedef struct note_attention {
    uint32_t note;                  /* the note-on's tag */
    uint8_t  pitch;
    uint8_t  n_heads;
    uint8_t  n[NOTE_ATTENTION_HEADS];                           /* each head's sources */
    uint32_t src[NOTE_ATTENTION_HEADS][NOTE_ATTENTION_TOP];     /* their tags, most attended first */
    float    weight[NOTE_ATTENTION_HEADS][NOTE_ATTENTION_TOP];  /* the head's probability on them */
} note_attention;

/* Where one sequence's last attention lies: SCORES (n_heads, context)
 * each head's probabilities over the cache's N_KEYS slots, the newest
 * event in slot NEWEST (model_state_scores, model_batch_scores). */
typedef struct attention_scores {
    const float *scores;
    int n_keys, newest;
} attention_scores;

/* A's sources for the note-on NOTE (PITCH) about to be handed out, from
 * S of model config MC, walked back through TAG (N_HIST tags parallel to
 * the cache's events, newest last; 0: not a tagged note-on). */
void attention_heads_of(note_attention *a, const attention_scores *s, const model_config *mc, const uint32_t *tag,
                        int n_hist, uint32_t note, int pitch);

#endif
