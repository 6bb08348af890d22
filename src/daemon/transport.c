/* transport.c: follows MIDI clock (tempo by a least-squares fit) and transport messages. */
#include "daemon/transport.h"

#include <string.h>

#include "util/stats.h"

#define GAP_NS     250000000LL  /* a longer pause in the clock starts the fit over */
#define MIN_PERIOD (60e9 / (400.0 * TRANSPORT_PPQN))   /* beyond 400 BPM: not a tempo */

void transport_init(transport *t)
{
    memset(t, 0, sizeof *t);
}

/* The line through the clocks in the ring (x = their index, y = their
 * arrival time relative to the newest), by Theil-Sen: the median of the
 * slopes between every two clocks, then the median intercept.  A late
 * clock, or a burst of clocks held up somewhere and delivered together,
 * moves it little, where a least-squares fit would be dragged along. */
static void fit(transport *t)
{
    double slopes[TRANSPORT_WINDOW * (TRANSPORT_WINDOW - 1) / 2], rest[TRANSPORT_WINDOW];
    double y[TRANSPORT_WINDOW];
    int n = t->n_fit, m = 0;
    int newest = (t->head + TRANSPORT_WINDOW - 1) % TRANSPORT_WINDOW;
    int64_t ref = t->tick_ns[newest];
    if (n < 2) {
        t->fit_last_ns = (double)ref;
        return;
    }
    for (int i = 0; i < n; i++)
        y[i] = (double)(t->tick_ns[(t->head + TRANSPORT_WINDOW - n + i) % TRANSPORT_WINDOW] - ref);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            slopes[m++] = (y[j] - y[i]) / (j - i);
    double slope = median_in_place(slopes, m);
    if (slope <= 0)         /* clocks all bunched up: keep the period there was */
        slope = t->period_ns;
    if (slope <= 0)
        return;
    for (int i = 0; i < n; i++)
        rest[i] = y[i] - slope * i;
    t->period_ns = slope;
    t->fit_last_ns = (double)ref + median_in_place(rest, n) + slope * (n - 1);
}

static void clock_tick(transport *t, int64_t now)
{
    if (t->last_tick_ns && now - t->last_tick_ns > GAP_NS)
        t->n_fit = 0;                   /* the clock paused: start over */
    t->tick_ns[t->head] = now;
    t->head = (t->head + 1) % TRANSPORT_WINDOW;
    if (t->n_fit < TRANSPORT_WINDOW)
        t->n_fit++;
    t->last_tick_ns = now;
    fit(t);
    if (t->running)
        t->next_pos++;
    t->clocks++;
}

int transport_input(transport *t, const midi_msg *m, int64_t now)
{
    switch (m->status) {
    case 0xF8:
        clock_tick(t, now);
        return TRANSPORT_CLOCK;
    case 0xFA:                          /* Start: from the top at the next clock */
        t->next_pos = 0;
        t->running = 1;
        t->starts++;
        return TRANSPORT_STARTED;
    case 0xFB:                          /* Continue: from the position at the next clock */
        t->running = 1;
        t->starts++;
        return TRANSPORT_STARTED;
    case 0xFC:
        if (!t->running)
            return 0;
        t->running = 0;
        t->stops++;
        return TRANSPORT_STOPPED;
    case 0xF2:                          /* Song Position Pointer: 16ths, 14 bits */
        if (t->running)
            return 0;                   /* only while stopped (MIDI 1.0) */
        t->next_pos = (int64_t)((m->data1 & 0x7F) | ((m->data2 & 0x7F) << 7)) * 6;
        t->positions++;
        return TRANSPORT_POSITION;
    default:
        return 0;
    }
}

int transport_locked(const transport *t, int64_t now)
{
    return t->n_fit >= 2 && t->period_ns > MIN_PERIOD && now - t->last_tick_ns <= 3 * t->period_ns;
}

double transport_bpm(const transport *t)
{
    return t->period_ns > 0 ? 60e9 / (t->period_ns * TRANSPORT_PPQN) : 0;
}

int64_t transport_time_of(const transport *t, int64_t pos)
{
    /* The last clock was at position next_pos - 1 (or, while stopped, the
     * clock to come is next_pos: the same line). */
    return (int64_t)(t->fit_last_ns + (double)(pos - (t->next_pos - 1)) * t->period_ns + 0.5);
}

int64_t transport_next_line(const transport *t, int64_t earliest, int64_t unit, int64_t *at)
{
    int64_t last = t->next_pos - 1;
    double ahead = ((double)earliest - t->fit_last_ns) / t->period_ns;
    int64_t pos = last + (ahead > 0 ? (int64_t)ahead : 0);
    if (pos < 0)
        pos = 0;
    pos = (pos + unit - 1) / unit * unit;
    while (transport_time_of(t, pos) < earliest)
        pos += unit;
    *at = transport_time_of(t, pos);
    return pos;
}

int64_t transport_position(const transport *t)
{
    if (t->running && t->next_pos > 0)
        return t->next_pos - 1;
    return t->next_pos;
}
