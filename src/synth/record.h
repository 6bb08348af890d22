/* record.h: the session recording: player and model on separate tracks of a MIDI file, the last keep_minutes of it. */
#ifndef CONTINUO_SYNTH_RECORD_H
#define CONTINUO_SYNTH_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "midi/smf.h"
#include "midi/stream.h"

enum { RECORD_TRACKS = 2 };
enum { RECORD_PLAYER = 0, RECORD_MODEL = 1 };

/* Channel messages with their times (seconds from the session start), one
 * ring per track, all of it allocated and touched by recorder_init, so that
 * adding never allocates and the memory a session holds is the same after
 * a minute and after a week.  A message older than keep_s (at the time of
 * the newest) leaves its ring; so does the oldest when a ring is full
 * (counted in dropped): what is older is in the journal. */
typedef struct recorder {
    smf_event *ev[RECORD_TRACKS];   /* rings of cap events; owned */
    size_t     head[RECORD_TRACKS]; /* index of the oldest */
    size_t     n[RECORD_TRACKS];
    size_t     cap;                 /* per track */
    double     keep_s;              /* <= 0: until the ring is full */
    uint64_t   dropped;             /* left a full ring before keep_s */
} recorder;

/* Rings of CAP events per track, keeping KEEP_S seconds.  0, or -1 (logged). */
int  recorder_init(recorder *r, size_t cap, double keep_s);
void recorder_free(recorder *r);
/* Adds M (channel messages only) at TIME to TRACK.  Returns 0, or -1 when
 * it was not kept (not a channel message). */
int  recorder_add(recorder *r, int track, double time, const midi_msg *m);
/* Writes what the rings hold to PATH (format 1: tracks "player" and
 * "continuo"), all or nothing, its times from the session start; a note
 * whose note-on left the ring is left out with its note-off.  Puts each
 * ring in order in place (nothing allocated).  0, or -1 after logging. */
int  recorder_save(recorder *r, const char *path);

#endif
