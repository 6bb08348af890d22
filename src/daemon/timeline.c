/* timeline.c: where an answer falls on the music's time line: the head start, the next beat or bar line, the quantize grid, the bar it ends on. */
#include "daemon/timeline.h"

#include <math.h>

#include "daemon/service.h"

/* quantize_kind -> grid steps a beat (QUANTIZE_OFF: none) */
static const double steps_per_beat[] = { 0, 2, 4, 3, 6 };

/* The generator's head start: lookahead_ms, or with -1 (auto) 10 ms or 30
 * events of the engine's measured cost if more, so that a chord's notes,
 * all due at once, are sampled in time. */
int timeline_lookahead_ms(const service *sv)
{
    if (sv->cfg.lookahead_ms >= 0)
        return sv->cfg.lookahead_ms;
    int ms = (int)ceil(30.0 * sv->gen.ms_per_event);
    return ms > 10 ? ms : 10;
}

int timeline_playing(const service *sv)
{
    if (sv->cfg.sync == SYNC_LINK)
        return sv->link.playing;
    return sv->cfg.sync != SYNC_CLOCK || sv->transport.running;
}

/* With sync = clock and the transport locked: the continuation starts on
 * the next beat or bar line (response_start) or the clock nearest the
 * head start, ends on a bar line (response_bars; a duet has no end), and
 * its notes move toward the quantize grid. */
static void time_on_clock(const service *sv, int duet, timeline *tl)
{
    const transport *tp = &sv->transport;
    int64_t beat = TRANSPORT_PPQN, bar = beat * sv->cfg.beats_per_bar, pos, at;
    if (sv->cfg.response_start != START_NOW) {
        pos = transport_next_line(tp, tl->begin, sv->cfg.response_start == START_BAR ? bar : beat, &at);
        tl->begin = at;
        tl->anchor = pos;
    } else {
        pos = transport_next_line(tp, tl->begin, 1, &at);  /* the clock nearest the start */
    }
    tl->origin = transport_time_of(tp, pos / beat * beat);
    if (sv->cfg.response_bars > 0 && !duet)
        tl->end = transport_time_of(tp, (pos / bar + sv->cfg.response_bars) * bar);
    if (sv->cfg.quantize != QUANTIZE_OFF)
        tl->grid = tp->period_ns * TRANSPORT_PPQN / steps_per_beat[sv->cfg.quantize];
}

/* With sync = link: as time_on_clock, on the session's timeline, read
 * now (Link's clock mapped to ours at each read): the next beat, or bar
 * line (a multiple of the quantum, beats_per_bar), at or after the head
 * start; the end response_bars further; the grid from the tempo. */
static void time_on_link(service *sv, int duet, timeline *tl)
{
    link_sync *ls = &sv->link;
    double q = sv->cfg.beats_per_bar, b = link_sync_beat_at(ls, tl->begin, q), line = b;
    if (sv->cfg.response_start == START_BAR)
        line = ceil(b / q - 1e-9) * q;
    else if (sv->cfg.response_start == START_BEAT)
        line = ceil(b - 1e-9);
    if (sv->cfg.response_start != START_NOW)
        tl->begin = link_sync_time_of(ls, line, q);
    tl->origin = link_sync_time_of(ls, floor(line), q);
    if (sv->cfg.response_bars > 0 && !duet)
        tl->end = link_sync_time_of(ls, (floor(line / q + 1e-9) + sv->cfg.response_bars) * q, q);
    if (sv->cfg.quantize != QUANTIZE_OFF && ls->tempo > 0)
        tl->grid = 60.0 * NS / ls->tempo / steps_per_beat[sv->cfg.quantize];
}

timeline timeline_plan(service *sv, int64_t now, int duet, int head_ms)
{
    timeline tl = { now + (int64_t)head_ms * 1000000, INT64_MAX, 0, 0, -1 };
    if (sv->cfg.sync == SYNC_CLOCK && transport_locked(&sv->transport, now))
        time_on_clock(sv, duet, &tl);
    else if (sv->cfg.sync == SYNC_LINK && link_sync_joined(&sv->link))
        time_on_link(sv, duet, &tl);
    return tl;
}
