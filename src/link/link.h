/* link.h: Ableton Link from C: join a session, read its tempo, beat phase and start/stop, propose a tempo. */
#ifndef CONTINUO_LINK_H
#define CONTINUO_LINK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A Link peer (src/link/link.cpp over ableton-link-dev, the only C++ in
 * continuo).  link_new opens nothing: the library's sockets exist only
 * between link_join(l, 1) and link_join(l, 0).  Link's own thread does
 * the networking; the calls below that read or change the session state
 * are the library's real-time ones (capture/commitAudioSessionState) and
 * must all come from one thread, the service loop's: they never block.
 * Times are CLOCK_MONOTONIC nanoseconds, the scheduler's clock: Link
 * counts on CLOCK_MONOTONIC_RAW, and the two are mapped again at every
 * call (they drift apart). */
typedef struct link_session link_session;

/* A peer at BPM, not joined.  Link's thread writes 1 to the eventfd
 * WAKE_FD (non-blocking) whenever the tempo, the peers or the start/stop
 * state change, so the loop can read the state again; it never calls into
 * continuo otherwise.  NULL when out of memory (logged). */
link_session *link_new(double bpm, int wake_fd);
void link_free(link_session *l);
/* Joins (ON) or leaves the session: 0, or -1 (logged). */
int  link_join(link_session *l, int on);
int  link_joined(const link_session *l);
/* Start/stop sync with the peers that have it on. */
void link_start_stop_sync(link_session *l, int on);

/* The session's timeline at NOW_NS: tempo, beat, phase within QUANTUM
 * beats, whether it plays, how many peers. */
typedef struct link_state {
    double   tempo;         /* beats per minute */
    double   beat;          /* at now_ns */
    double   phase;         /* 0 <= phase < quantum */
    int      playing;
    unsigned peers;
    int64_t  now_ns;
} link_state;
void link_read(link_session *l, double quantum, int64_t now_ns, link_state *out);
/* When the session's BEAT falls (CLOCK_MONOTONIC ns), with QUANTUM. */
int64_t link_time_at_beat(link_session *l, double beat, double quantum);
/* Proposes BPM to the session, from now. */
void link_set_tempo(link_session *l, double bpm);
/* Starts or stops the session's transport now (start/stop sync). */
void link_set_playing(link_session *l, int playing);

#ifdef __cplusplus
}
#endif

#endif
