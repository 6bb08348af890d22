/* generator.h: the generator thread: runs the engine so the service loop never blocks. */
#ifndef CONTINUO_DAEMON_GENERATOR_H
#define CONTINUO_DAEMON_GENERATOR_H

#include <pthread.h>
#include <stdint.h>

#include "daemon/engine.h"
#include "play/turn.h"
#include "util/ring.h"
#include "util/log.h"

/* Commands from the loop to the generator. */
typedef enum gen_cmd_kind {
    GEN_LISTEN,     /* heard: a player's message for the context */
    GEN_RESPOND,    /* start continuation `id` at session time `at` */
    GEN_STOP,       /* stop the current continuation; `at` = seconds played */
    GEN_REROLL,     /* rewind the last continuation, then as GEN_RESPOND */
    GEN_REPLAY,     /* a take's events (replay, n_replay) enter the context from `at`
                       as the model's playing; the thread frees replay */
    GEN_PREPARE,    /* the phrase up to `at` may have ended: think over the candidate
                       answers of `spec` (the spec its GEN_RESPOND will carry), and
                       with turn.max_ms > 0 judge when it ends (a verdict back) */
    GEN_SWAP,       /* `state`, an engine state opened off the thread (a model switched
                       live), takes the running one's place once no continuation
                       is being generated; a swap verdict comes back */
    GEN_QUIT,
} gen_cmd_kind;

typedef struct gen_cmd {
    gen_cmd_kind kind;
    uint32_t  id;           /* continuation id (RESPOND, REROLL); PREPARE: its verdict's */
    double    at;
    smf_event heard;        /* LISTEN: the message, at session time heard.time */
    cont_spec spec;         /* RESPOND, REROLL, PREPARE: how it is played, its length; with
                               spec.duet the player's events (LISTEN) join it
                               instead of stopping it, and it is sampled no
                               further than DUET_AHEAD_S ahead of its time line
                               on CLOCK_MONOTONIC */
    int64_t   start_ns;     /* RESPOND with a duet: CLOCK_MONOTONIC of its time 0 */
    turn_rule turn;         /* PREPARE: how the phrase end is judged (max_ms 0: it is not) */
    cont_event *replay;     /* REPLAY: a copy of the take's events (malloc'd; the thread frees it) */
    int       n_replay;
    void     *state;        /* SWAP: the new engine state (the thread closes the one it drops) */
} gen_cmd;

#define DUET_AHEAD_S 0.25   /* duet: how far ahead of the music the model samples */

/* What the generator sends back: an event of continuation `id`, or its
 * end; or (turn) the verdict on the silence of GEN_PREPARE `id`. */
typedef struct gen_out {
    uint32_t  id;
    uint8_t   done;         /* 1: continuation `id` has no more events */
    cont_event ev;          /* time from the continuation's first note; turn: ev.time is
                               when the phrase ends, seconds after its last release
                               (turn_verdict, at most turn.max_ms) */
    uint8_t   turn;         /* 1: a verdict, not an event */
    float     margin;       /* turn: how sure it was (turn_verdict's margin; NAN: the cue rule
                               did not judge) */
    int8_t    swap;         /* GEN_SWAP's verdict, not an event: 1 the new state runs (the
                               old one is closed), -1 it could not take over (closed;
                               the old one runs on) */
} gen_out;

/* The thread and its two rings.  Data crosses only through the rings
 * (lock-free SPSC: the loop produces commands and consumes output, the
 * thread the reverse); each side wakes the other with an eventfd.  The
 * engine state belongs to the thread alone. */
typedef struct generator {
    const engine_ops *engine;
    void     *state;        /* engine state; owned by the thread */
    ring      cmds, outs;
    int       wake_gen;     /* eventfd: the loop rings it after pushing a command */
    int       wake_loop;    /* eventfd: the thread rings it after pushing output;
                               the loop polls it */
    pthread_t thread;
    int       running;
    _Atomic int64_t  progress_ns; /* CLOCK_MONOTONIC of the thread's last
                                    progress (a command run, an event
                                    sampled); 0 while it waits for a command */
    int64_t          stall_ns;   /* no progress for this long while busy: stalled */
    _Atomic int      failed;     /* the engine returned an error */
    double    ms_per_event;      /* the engine's, at open (0: unknown or none) */
    _Atomic uint32_t ready;      /* thread: the GEN_PREPARE whose answer is thought over
                                    far enough (engine ready) for its begin to need no
                                    head start; 0: none */
    /* watchers (docs/WATCH.md): the loop counts them, the thread tells the
     * engine and sends each model note-on's sources on their own ring
     * (dropped, counted, when the loop has not taken them) */
    ring             heads;      /* note_attention, thread -> loop */
    _Atomic int      watchers;   /* loop: subscribers now */
    _Atomic uint64_t heads_dropped;
    int              watching;   /* thread: what the engine was last told */
    log_limit        drop_warn;  /* the thread's "output ring full" warning */
} generator;

/* Opens the engine (model loaded here, in the caller's thread, so a bad
 * model stops the start) and starts the thread. */
int  generator_start(generator *g, const engine_ops *engine, const config *cfg);
/* Loop side: what the loop reads of the engine's speed, MS_PER_EVENT (the
 * lookahead, timeline.c) and the stall threshold for CONTEXT_EVENTS; at
 * start, and after a swap. */
void generator_set_speed(generator *g, double ms_per_event, int context_events);
/* How long the thread has been busy without progress at NOW (ns); 0 while
 * it moves or waits for a command.  Over g->stall_ns it is stalled: the loop
 * stops its WATCHDOG=1 pings, so systemd restarts the service. */
int64_t generator_stalled_ns(const generator *g, int64_t now);
/* Sends GEN_QUIT, joins, closes the engine.  Safe on a failed start. */
void generator_stop(generator *g);
/* Loop side. Returns 0, or -1 when the command ring is full (dropped). */
int  generator_send(generator *g, const gen_cmd *c);
/* Loop side: 1 when the thread has taken every command sent and waits for
 * the next (no progress under way): what it was sent is heard. */
int  generator_idle(generator *g);
/* Loop side: pops one output; 1 if one, 0 if none.  Call
 * generator_ack_wake first when the wake_loop fd is readable. */
int  generator_receive(generator *g, gen_out *o);
void generator_ack_wake(generator *g);
/* Loop side: the id of the GEN_PREPARE whose answer is ready to start
 * with no head start (engine_ops.ready), or 0. */
uint32_t generator_ready(generator *g);
/* Loop side: pops one note-on's sources (watchers); 1 if one, 0 if none. */
int  generator_receive_heads(generator *g, note_attention *a);

#endif
