/* scheduler.h: plays timestamped MIDI on time against CLOCK_MONOTONIC; no stuck notes. */
#ifndef CONTINUO_DAEMON_SCHEDULER_H
#define CONTINUO_DAEMON_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

#include "midi/stream.h"

/* Which notes sound on an output, and since when (ns, CLOCK_MONOTONIC). */
typedef struct note_table {
    int64_t start[16][128];     /* onset time; valid while on[][] */
    uint8_t on[16][128];
    int     count;              /* notes sounding */
} note_table;

void note_table_clear(note_table *t);
/* Updates T for a message that was sent at NOW (note on/off only). */
void note_table_update(note_table *t, const midi_msg *m, int64_t now);

/* Where the scheduler's messages go: called for every message it sends,
 * with the time it is sent. */
typedef void (*sched_emit_fn)(void *user, const midi_msg *m, int64_t now);

#define SCHED_LATE_SAMPLES 4096

/* One message waiting for its deadline. */
typedef struct sched_event {
    int64_t  due;       /* absolute CLOCK_MONOTONIC ns */
    uint64_t seq;       /* push order: ties keep it */
    midi_msg msg;
} sched_event;

/* A min-heap of events (allocated once, never grown: pushing never
 * allocates) and the note table of what it made sound.  Guarantees: a
 * note-on that was sent gets its note-off, at the latest max_note_ns after
 * it started (the sweep), or at once on scheduler_silence; at most
 * max_held notes sound (further note-ons are dropped, and so are the
 * note-offs that would have ended them); a re-struck sounding pitch is
 * ended first. */
typedef struct scheduler {
    sched_event *heap;      /* capacity; owned */
    size_t   n, capacity;
    uint64_t next_seq;
    note_table notes;
    int64_t  oldest_start;  /* no later than the start of any sounding note:
                             * the sweep scans the table only once it is due */
    int64_t  max_note_ns;
    int      max_held;
    /* counters (only grow) */
    uint64_t sent, dropped_full, dropped_held, swept, late;
    int64_t  max_late_ns;   /* worst lateness of a message past its deadline */
    int32_t  late_us[SCHED_LATE_SAMPLES]; /* lateness of the last messages sent, us */
    uint64_t n_late_samples;              /* written so far (ring index = n % size) */
} scheduler;

int  scheduler_init(scheduler *s, size_t capacity, int64_t max_note_ns, int max_held);
void scheduler_free(scheduler *s);

/* Queues M for time DUE.  Returns 0, or -1 when the queue is full (the
 * message is dropped and counted). */
int scheduler_push(scheduler *s, int64_t due, const midi_msg *m);

/* Takes back M queued for DUE (the last pushed of its kind): 1, or 0 when
 * none is queued (sent already, or never pushed). */
int  scheduler_unpush(scheduler *s, int64_t due, const midi_msg *m);

/* Earliest time scheduler_run has work: the next deadline or the next
 * note-length cap; INT64_MAX when there is none. */
int64_t scheduler_next_deadline(const scheduler *s);

/* Sends every message due by NOW (plus SLACK_NS) in time order, then ends
 * notes held past max_note_ns. */
void scheduler_run(scheduler *s, int64_t now, int64_t slack_ns, sched_emit_fn emit, void *user);

/* Drops every queued message (panic, interruption, re-roll). */
void scheduler_drop_queued(scheduler *s);

/* Moves every queued message DELTA ns later (earlier if negative). */
void scheduler_shift_queued(scheduler *s, int64_t delta);

/* Sends a note-off for every note sounding, at once. */
void scheduler_silence(scheduler *s, int64_t now, sched_emit_fn emit, void *user);

size_t scheduler_queued(const scheduler *s);

#endif
