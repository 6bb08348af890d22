/* record.h: the session recording: player and model on separate tracks of a MIDI file. */
#ifndef CONTINUO_SYNTH_RECORD_H
#define CONTINUO_SYNTH_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "midi/smf.h"
#include "midi/stream.h"

enum { RECORD_PLAYER = 0, RECORD_MODEL = 1, RECORD_TRACKS = 2 };

/* Channel messages with their times (seconds from the session start), one
 * growing array per track.  Memory is reserved up front (recorder_init) so
 * the real-time path normally does not allocate; past it the arrays double
 * (rare), and past max_events the oldest are kept and new ones counted as
 * dropped, so memory stays bounded over a long session. */
typedef struct recorder {
    smf_event *ev[RECORD_TRACKS];   /* owned */
    size_t     n[RECORD_TRACKS], cap[RECORD_TRACKS];
    size_t     max_events;          /* per track */
    uint64_t   dropped;
} recorder;

int  recorder_init(recorder *r, size_t reserve, size_t max_events);
void recorder_free(recorder *r);
/* Adds M (channel messages only) at TIME to TRACK.  Returns 0, or -1 when
 * it was not kept (not a channel message, or max_events reached). */
int  recorder_add(recorder *r, int track, double time, const midi_msg *m);
/* Writes the session to PATH (format 1: tracks "player" and "continuo"),
 * all or nothing.  Returns 0, or -1 after logging the cause. */
int  recorder_save(const recorder *r, const char *path);
size_t recorder_count(const recorder *r, int track);

#endif
