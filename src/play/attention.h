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

#endif
