/* live.h: the answer's life: when it starts and ends on the music's time line, where its notes fall, which are left out. */
#ifndef CONTINUO_DAEMON_LIVE_H
#define CONTINUO_DAEMON_LIVE_H

#include <stdint.h>

#include "daemon/generator.h"
#include "daemon/takes.h"
#include "io/midi_port.h"

struct service;

/* The continuation playing, on the loop's side (the generator samples it:
 * play/continuation.h).  Its events come with times from its first note;
 * here they become deadlines on CLOCK_MONOTONIC: from `start`, moved toward
 * the grid (quantize), onto a DAW's beat (anchor), cut at `end` (bars),
 * thinned while the player plays (duet). */
typedef struct live_cont {
    uint32_t next_id, id;           /* id: the one playing; 0: none */
    int      gen_done;              /* the generator sent its end */
    int      duet;                  /* it is a duet (mode = duet): endless, not interrupted */
    uint64_t duet_rng;              /* duet_density's draws (xorshift64) */
    uint64_t duet_thinned;          /* the model's note-ons left out while the player played */
    int64_t  start;                 /* ns: time zero of its events */
    int64_t  end;                   /* ns: bar line it ends on (response_bars); INT64_MAX: none */
    int64_t  grid_origin;           /* ns: a beat line, for quantize; grid_ns 0: off */
    double   grid_ns;               /* quantize grid step */
    int64_t  anchor_pos;            /* song position of the clock tick the first note
                                       waits for (response_start = beat|bar); -1: none */
    int64_t  anchor_until;          /* ns: past this it goes on without the tick */
    uint64_t anchored, anchor_missed;   /* continuations started on their tick, or not */
    int64_t  shift_ns[128];         /* quantize: how far each pitch's sounding note moved */
    int64_t  last_off[128];         /* due time of each pitch's last note-off */
    int64_t  on_due[128];           /* due time of each pitch's note-on still sounding; 0: none */
    midi_msg on_msg[128];           /* ... and the message queued for it */
    double   last_t;                /* time of its latest event so far, s */
    int64_t  phrase_end_ns;         /* when the phrase it answers ended */
    double   phrase_end_t;          /* the same in session seconds (a re-roll answers it again) */
    int      have_last_phrase;      /* a phrase was answered (re-roll possible) */
    int      first_note_pending;    /* its first note-on is still to go out (latency) */
    uint64_t n_received;            /* its events from the generator */
    uint64_t late_starts;           /* continuations whose first event came late: they
                                       started when it came (free time line) */
    struct take *take;              /* its take, being recorded (borrowed: a slot of the takes) */
    unsigned replay_next;           /* `replay N next`: the next phrase is answered with take N */
    int64_t  prepared_for;          /* the phrase (its last activity, ns) whose answer
                                       (its candidates, or the one answer) and verdict
                                       (phrase_end = auto) were asked for; 0: none */
    uint64_t prepared;              /* prepares asked for, in all */
    uint32_t prepare_id;            /* the last GEN_PREPARE's id: its verdict comes back
                                       with it */
    uint64_t judged, judged_early;  /* verdicts taken; of them, sooner than the silence rule */
    float    margin;                /* how sure the last verdict was (turn_verdict's margin; NAN: none
                                       yet, or not the cue rule's) */
    int64_t  release_ns;            /* the answered phrase's last release, ns, when silence
                                       or a verdict ended it (answer delay); 0: none */
    int      barge_open;            /* its answer may yet be barged into (BARGE_IN_NS) */
    cont_spec prepared_spec;        /* the spec the last GEN_PREPARE thought over */
    int      answer_ready;          /* the phrase ending now was thought over far enough
                                       (generator_ready): its answer gets no head start */
} live_cont;

/* All of these run on the loop thread: it alone owns live_cont, and the
 * generator hears of an answer only through its commands (generator.h). */

/* The continuation is still going: being generated, queued or sounding. */
int  service_responding(const struct service *sv);
/* A continuation starts, timed by the config and the time line: the phrase
 * ended at NOW, WHY says how (the JSON members of the watchers' phrase_end
 * frame, docs/WATCH.md); or, live_reroll, the last phrase is answered again. */
void live_start(struct service *sv, int64_t now, const char *why);
void live_reroll(struct service *sv, int64_t now);
/* The phrase heard up to session time AT is answered, asked at NOW:
 * sampled, or after `replay N next` with take N.  Returns 0, or -1 when
 * the generator's ring is full (logged). */
int  live_answer(struct service *sv, int64_t now, double at);
/* Drops what is queued of it and ends its notes. */
void live_stop(struct service *sv, int64_t now);
/* A new continuation's command of KIND into C: its id (never 0) and the
 * spec the config gives. */
void live_command(struct service *sv, gen_cmd *c, gen_cmd_kind kind);
/* The loop's side of a take played again (C: the GEN_REPLAY sent at NOW):
 * TK, the new take holding its events (takes_replay), is placed as an
 * answer is, not thinned, and ends after its last event. */
void live_begin_replay(struct service *sv, const gen_cmd *c, int64_t now, take *tk);
/* The generator's events into the scheduler (its wake fd was readable). */
void live_receive(struct service *sv);
/* A MIDI clock tick read at NOW, while a continuation waits for its beat. */
void live_on_tick(struct service *sv, int64_t now);
/* The scheduler may play up to live_hold's answer (NOW, or just before
 * the start while the first note waits for its beat's tick, which is
 * given up past anchor_until); live_hold_wake moves a wake-up at or past
 * the start to anchor_until while it waits. */
int64_t live_hold(struct service *sv, int64_t now);
int64_t live_hold_wake(const struct service *sv, int64_t wake);
/* What is due by NOW on the music's side: an anchor given up, a duet to go
 * on or to stop, a phrase end to answer, its candidates to prepare.
 * Returns 1 when it acted, else 0 with the earliest time it will have
 * work in *WAKE (INT64_MAX: none). */
int  live_due(struct service *sv, int64_t now, int64_t *wake);
/* Panic: stops the continuation and ends every sounding note at once. */
void service_panic(struct service *sv, int64_t now);

#endif
