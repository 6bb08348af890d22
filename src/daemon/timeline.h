/* timeline.h: the music's time line an answer is placed on: free, a DAW's MIDI clock, or an Ableton Link session. */
#ifndef CONTINUO_DAEMON_TIMELINE_H
#define CONTINUO_DAEMON_TIMELINE_H

#include <stdint.h>

struct service;

/* Where a continuation falls on the music's time line (ns, CLOCK_MONOTONIC). */
typedef struct timeline {
    int64_t begin, end;     /* its time 0; the bar line it ends on (INT64_MAX: none) */
    int64_t origin;         /* a beat line, for the grid */
    double  grid;           /* the quantize grid's step; 0: off */
    int64_t anchor;         /* the song position whose tick its first note waits for; -1: none */
} timeline;

/* Where a continuation asked for at NOW falls: HEAD_MS from now (the head
 * start: timeline_lookahead_ms, or less for an answer thought over in the
 * silence) on the free time line; with sync = clock and
 * the transport locked, or sync = link and the session joined, its beat
 * or bar line (response_start), the quantize grid, and the bar line it
 * ends on (response_bars; DUET: none).  Reads the config, the transport
 * and the Link session; changes nothing. */
timeline timeline_plan(struct service *sv, int64_t now, int duet, int head_ms);
/* The generator's head start, ms (lookahead_ms, or auto). */
int  timeline_lookahead_ms(const struct service *sv);
/* The music plays, so the model may answer: always with sync = free; with
 * sync = clock while the transport runs; with sync = link while the
 * session plays (link_sync's rule). */
int  timeline_playing(const struct service *sv);

#endif
