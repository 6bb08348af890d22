/* takes.h: every answer the service played, kept to be played again (`ctl takes`, `replay`, `save-take`). */
#ifndef CONTINUO_DAEMON_TAKES_H
#define CONTINUO_DAEMON_TAKES_H

#include <stddef.h>
#include <stdint.h>

#include "play/continuation.h"

#define TAKES_KEPT   16         /* the last takes kept */
#define TAKE_EVENTS  4096       /* events kept of one take (a longer one keeps its first ones) */

/* One answer: its events as the generator sent them (times from its first
 * note; before the grid, a beat or the duet's thinning place them; cut to
 * what sounded when it was stopped), with what it was played from. */
typedef struct take {
    unsigned      number;       /* 1, 2, ... in the session */
    double        when;         /* session seconds it started */
    uint64_t      seed;
    play_settings play;
    unsigned      replay_of;    /* a replay: the take it played again; 0: sampled */
    int           n;
    cont_event    ev[TAKE_EVENTS];
} take;

/* A ring of the last TAKES_KEPT takes, allocated with the service (no
 * allocation while playing).  The loop thread alone uses it. */
typedef struct takes {
    take     t[TAKES_KEPT];
    unsigned last;              /* number of the newest take; 0: none yet */
    unsigned cursor;            /* "previous take" steps back from here; 0: from the newest */
} takes;

/* A take starts (the newest, numbered last + 1): it replaces the oldest. */
take *takes_start(takes *ts, double when, uint64_t seed, const play_settings *play, unsigned replay_of);
/* Take NUMBER (kept: takes_find) played again starts a take of its own,
 * as takes_start does, with NUMBER's seed, settings and events (in place
 * when the new take reuses NUMBER's slot); "previous take" stays where it
 * was. */
take *takes_replay(takes *ts, double when, unsigned number);
/* Its event E (the take being recorded). */
void  takes_add(take *t, const cont_event *e);
/* The answer T records was stopped AT seconds from its start (the player
 * came back, a panic, a hand-over): T keeps what sounded, the events
 * before AT, and each note still held then ends at AT.  NULL: nothing. */
void  takes_cut(take *t, double at);
/* Take NUMBER, or NULL when it is not kept (too old, or not played yet). */
const take *takes_find(const takes *ts, unsigned number);
/* One line: "N takes: #3 at 12.0 s, 4.20 s, 20 notes, seed 1003; ..." (the newest first). */
void  takes_list(const takes *ts, char *buf, size_t len);
/* Writes take T to PATH as a one-track MIDI file (its first note at 0), all
 * or nothing.  Returns 0, or -1 after logging. */
int   takes_save(const take *t, int channel, const char *path);

#endif
