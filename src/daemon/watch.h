/* watch.h: what `serve` tells its watchers (a `watch` on the control socket): the notes in and out, each model note-on's attention per head, settings, marks; one JSON object a line (docs/WATCH.md). */
#ifndef CONTINUO_DAEMON_WATCH_H
#define CONTINUO_DAEMON_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/options.h"
#include "play/attention.h"

struct service;

/* The player's note ids, and the last id of each pitch on each side (for
 * the note-offs).  Ids are assigned whether or not anyone watches: the
 * model's context keeps them (play/context.h's tags). */
typedef struct watch_ids {
    uint32_t next_player;           /* the next player's note-on's id, 1.. */
    uint32_t player[128];           /* each pitch's last note-on, the player's */
    uint32_t model[128];            /* ... the model's (its tag) */
    double   link_tempo;            /* the Link session as the last sync frame told it */
    unsigned link_peers;
    int      link_playing;
} watch_ids;

/* The id of the player's note-on PITCH heard now (its tag in the context). */
uint32_t watch_player_id(struct service *sv, int pitch);

/* Writes the hello frame (no newline) into BUF: the protocol's version,
 * the session time now, the engine and model, what attention frames
 * hold, the knobs and the sync state. */
void watch_hello(struct service *sv, char *buf, size_t len);

/* Frames, sent only while someone watches (each is a no-op otherwise).
 * note: the player's (MODEL 0) or the model's note on or off at session
 * time T; TAG its id (0: none, a replayed take's).  set: option O's value
 * now.  mark: KIND ("phrase_end", "answer", "answer_stop", "saved") at
 * session time T, with EXTRA (a JSON member list, "" none).  heads: every
 * model note-on's sources the generator has sent. */
void watch_note(struct service *sv, int model, int on, int pitch, int velocity, double t, uint32_t tag);
void watch_set(struct service *sv, const option_def *o);
void watch_mark(struct service *sv, const char *kind, double t, const char *extra);
void watch_heads(struct service *sv);
/* A sync frame when the Link session's tempo, peers or start/stop state
 * differ from the last one sent (Link's thread woke the loop). */
void watch_sync(struct service *sv);

#endif
