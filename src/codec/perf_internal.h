/* perf_internal.h: what the codec's notes <-> events files share and no caller sees: the order of notes (note lists, perf_notes_from_midi) and the sustain pedal's folding rules (perf_pedal.c; perf_notes_from_midi and the streaming encoder). */
#ifndef CONTINUO_PERF_INTERNAL_H
#define CONTINUO_PERF_INTERNAL_H

#include <stdint.h>

#include "codec/perf.h"
#include "midi/smf.h"

/* The order of a sorted note list: by onset, then pitch. */
static inline int note_before(const note *a, const note *b)
{
    return a->onset < b->onset || (a->onset == b->onset && a->pitch < b->pitch);
}

enum { KEY_SILENT, KEY_HELD, KEY_SUSTAINED };

/* What channel events do to the note of each pitch (all channels merged). */
typedef struct pedal_fold {
    uint8_t state[128];     /* KEY_SILENT / KEY_HELD / KEY_SUSTAINED */
    int     pedal;          /* CC64 >= 64 */
} pedal_fold;

/* What one event did: the notes that end now (their pitches), then the
 * pitch struck (-1: none) and its velocity. */
typedef struct fold_step {
    uint8_t ends[128];
    int     n_ends;
    int     struck;
    int     velocity;
} fold_step;

/* The rules of REFERENCE.md: note-on with velocity 0 is a note-off; a pitch
 * struck while it sounds (held or sustained) ends first; a note-off of a
 * silent pitch does nothing; a key released while the pedal is down sounds
 * on until the pedal lifts (or the key is struck again).  F starts zeroed. */
void perf_fold_event(pedal_fold *f, const smf_event *ev, fold_step *out);

#endif
