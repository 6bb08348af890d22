/* transport.h: MIDI clock and transport: tempo, song position, beat and bar times. */
#ifndef CONTINUO_DAEMON_TRANSPORT_H
#define CONTINUO_DAEMON_TRANSPORT_H

#include <stdint.h>

#include "midi/stream.h"

#define TRANSPORT_PPQN    24    /* MIDI clocks per quarter note (beat) */
#define TRANSPORT_WINDOW  24    /* clocks the tempo is fitted over: one beat */

/* What a real-time or system message did to the transport (bits). */
enum {
    TRANSPORT_CLOCK    = 1,     /* a clock tick (0xF8) */
    TRANSPORT_STARTED  = 2,     /* Start (0xFA) or Continue (0xFB) */
    TRANSPORT_STOPPED  = 4,     /* Stop (0xFC) while running */
    TRANSPORT_POSITION = 8,     /* Song Position Pointer (0xF2) */
};

/* The clock follower.  Tempo: a robust line (Theil-Sen: median slope)
 * through the arrival times of the last TRANSPORT_WINDOW clocks (one
 * beat), so late, early or bunched ticks move it little and a new tempo
 * has replaced the old one entirely after one beat of clocks.  A pause in the clock longer than
 * TRANSPORT_GAP_NS, or three clock periods, starts the fit over.
 * Position: MIDI clocks since the start of the song; Start sets it to 0,
 * Song Position Pointer (only while stopped, as the MIDI spec says) to
 * its value times 6, Continue keeps it; each clock while running is one
 * step.  Plain data, owned by the service loop; no allocation. */
typedef struct transport {
    int      running;           /* 1 between Start/Continue and Stop */
    int64_t  next_pos;          /* song position (clocks) of the next clock to come */
    int64_t  tick_ns[TRANSPORT_WINDOW]; /* arrival times of the last clocks (ring) */
    int      n_fit;             /* clocks in the ring (0..TRANSPORT_WINDOW) */
    int      head;              /* ring index of the next clock */
    int64_t  last_tick_ns;      /* arrival of the last clock; 0: none yet */
    double   period_ns;         /* fitted clock period; 0: unknown */
    double   fit_last_ns;       /* the line's time of the last clock */
    /* counters (only grow) */
    uint64_t clocks, starts, stops, positions;
} transport;

void transport_init(transport *t);

/* Takes one message received at NOW (ns, CLOCK_MONOTONIC); returns
 * TRANSPORT_* bits (0 for anything that is not clock or transport). */
int transport_input(transport *t, const midi_msg *m, int64_t now);

/* 1 when the tempo is known (and below 400 BPM) and the clock is still
 * coming at NOW (the last clock is no older than three periods): beat
 * times can be predicted. */
int transport_locked(const transport *t, int64_t now);

/* Beats per minute; 0 when unknown. */
double transport_bpm(const transport *t);

/* The predicted arrival time (ns) of the clock at song position POS;
 * meaningful only while transport_locked. */
int64_t transport_time_of(const transport *t, int64_t pos);

/* The first song position that is a multiple of UNIT clocks (24: a beat;
 * 24 * beats_per_bar: a bar line) and is due at EARLIEST or later; its
 * time goes to *AT.  Only while transport_locked. */
int64_t transport_next_line(const transport *t, int64_t earliest, int64_t unit, int64_t *at);

/* The position now: the last clock's while running, else where the song
 * will start (Continue) from. */
int64_t transport_position(const transport *t);

#endif
