/* linksync.h: sync = link: the loop's side of an Ableton Link session (tempo, beat lines, start/stop). */
#ifndef CONTINUO_DAEMON_LINKSYNC_H
#define CONTINUO_DAEMON_LINKSYNC_H

#include <stddef.h>
#include <stdint.h>

/* What link_sync_update saw change (bits). */
enum {
    LINK_STARTED = 1,           /* the session counts as playing again */
    LINK_STOPPED = 2,           /* a peer stopped it (start/stop sync) */
};

/* Owned by the service loop, which alone calls these (the library's
 * real-time state is read from one thread).  The session (and Link's
 * sockets and thread) exists only while joined.  "Playing": alone, or
 * when no peer has started the session, it counts as playing; once a
 * peer with start/stop sync has started it, it plays as they say.  With
 * link_start_stop off it always plays. */
typedef struct link_sync {
    struct link_session *l;     /* NULL: not joined */
    int      wake_fd;           /* eventfd Link's thread writes; -1 */
    int      start_stop;        /* link_start_stop */
    int      seen_playing;      /* a peer started the session since we joined */
    int      playing;           /* as continuo counts it */
    double   tempo;             /* at the last update */
    unsigned peers;
    uint64_t starts, stops;     /* counters (only grow) */
} link_sync;

void link_sync_init(link_sync *s);
/* 1 when this continuo was built with Ableton Link (-Dlink). */
int  link_sync_built(void);
/* Joins the session at BPM (the tempo proposed when alone): 0, or -1
 * with why (not built, out of memory, no eventfd). */
int  link_sync_join(link_sync *s, double bpm, int start_stop, char *why, size_t len);
void link_sync_leave(link_sync *s);
int  link_sync_joined(const link_sync *s);
void link_sync_set_start_stop(link_sync *s, int on);
/* The eventfd to poll while joined, else -1. */
int  link_sync_fd(const link_sync *s);
/* Reads the session state again (after the fd woke, and whenever the loop
 * wants fresh figures): LINK_* bits. */
int  link_sync_update(link_sync *s, int64_t now);
/* The beat at NOW (ns, CLOCK_MONOTONIC) with QUANTUM, and the time of BEAT:
 * the session's timeline, Link's clock mapped to ours at each call. */
double  link_sync_beat_at(link_sync *s, int64_t now, double quantum);
int64_t link_sync_time_of(link_sync *s, double beat, double quantum);
double  link_sync_phase_at(link_sync *s, int64_t now, double quantum);
/* Proposes BPM to the session: 0, or -1 when not joined. */
int  link_sync_set_tempo(link_sync *s, double bpm);

#endif
