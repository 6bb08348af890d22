/* smf_time.h: a MIDI file's time line from its ticks (private to src/midi: smf_read.c's last step). */
#ifndef CONTINUO_SMF_TIME_H
#define CONTINUO_SMF_TIME_H

#include <stddef.h>
#include <stdint.h>

#include "midi/smf.h"

/* A tempo event as found, before the map is sorted. */
typedef struct tempo_found {
    uint32_t tick;
    uint32_t usec_per_quarter;
    uint32_t seq;               /* order in the file: ties in tick keep it */
} tempo_found;

/* After all chunks are read into F (each track's events in tick order, one
 * run per track): builds F's tempo map from TEMPOS (N_TEMPOS, borrowed,
 * sorted in place), merges the tracks' runs by tick (stable: ties keep track
 * order, then file order), sets every event's time and F's duration.
 * *EVENT_CAP follows F's events array when the merge replaces it.  0, or -1
 * when out of memory (not logged: the reader logs it). */
int smf_place_in_time(smf *f, tempo_found *tempos, size_t n_tempos, size_t *event_cap);

#endif
