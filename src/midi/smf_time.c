/* smf_time.c: a MIDI file's time line: the global tempo map, the tracks merged by tick, every event's time in seconds. */
#include "midi/smf_time.h"

#include <stdlib.h>

#define DEFAULT_USEC_PER_QUARTER 500000u

/* Seconds at TICK. *NEXT is the first tempo map entry not yet in force
 * (start at 0); calls with one *NEXT must come in nondecreasing tick order. */
static double tick_time(const smf *f, size_t *next, uint32_t tick)
{
    if (f->smpte_fps) {
        double fps = f->smpte_fps == 29 ? 29.97 : (double)f->smpte_fps;
        return (double)tick / (fps * f->smpte_ticks_per_frame);
    }
    while (*next < f->n_tempos && f->tempos[*next].tick <= tick)
        (*next)++;
    uint32_t t0 = 0, usec = DEFAULT_USEC_PER_QUARTER;
    double s0 = 0.0;
    if (*next > 0) {
        const smf_tempo *seg = &f->tempos[*next - 1];
        t0 = seg->tick;
        s0 = seg->time;
        usec = seg->usec_per_quarter;
    }
    return s0 + (double)(tick - t0) * usec / (1e6 * f->division);
}

static int cmp_tempo(const void *a, const void *b)
{
    const tempo_found *x = a, *y = b;
    if (x->tick != y->tick)
        return x->tick < y->tick ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The global tempo map from FOUND (N, sorted here): by tick, one entry per
 * tick, times set. */
static int build_tempo_map(smf *f, tempo_found *found, size_t n_found)
{
    if (n_found == 0)
        return 0;
    qsort(found, n_found, sizeof *found, cmp_tempo);
    f->tempos = malloc(n_found * sizeof *f->tempos);
    if (!f->tempos)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < n_found; i++) {
        if (n > 0 && f->tempos[n - 1].tick == found[i].tick)
            n--;                                /* the later one at a tick wins */
        f->tempos[n].tick = found[i].tick;
        f->tempos[n].usec_per_quarter = found[i].usec_per_quarter;
        n++;
    }
    size_t next = 0;
    for (size_t i = 0; i < n; i++) {
        f->n_tempos = i;                        /* entry i timed by entries 0..i-1 */
        f->tempos[i].time = tick_time(f, &next, f->tempos[i].tick);
    }
    f->n_tempos = n;
    return 0;
}

/* Stable merge of the tracks' runs (each already in tick order) by tick:
 * O(n log tracks), ties keep track order, then file order. */
static int merge_tracks(smf *f, size_t *event_cap)
{
    size_t n = f->n_events, runs = 0;
    if (f->n_tracks < 2 || n < 2)
        return 0;
    size_t *bound = malloc(((size_t)f->n_tracks + 1) * sizeof *bound);
    smf_event *tmp = malloc(n * sizeof *tmp);
    if (!bound || !tmp) {
        free(bound);
        free(tmp);
        return -1;
    }
    bound[0] = 0;
    for (int i = 0; i < f->n_tracks; i++)
        if (f->tracks[i].n_events)
            bound[runs + 1] = bound[runs] + f->tracks[i].n_events, runs++;
    smf_event *src = f->events, *dst = tmp;
    while (runs > 1) {
        size_t nr = 0;
        for (size_t i = 0; i < runs; i += 2) {
            size_t a = bound[i], am = bound[i + 1];
            size_t b = am, bm = i + 1 < runs ? bound[i + 2] : am;
            size_t o = a;
            while (a < am && b < bm)
                dst[o++] = src[b].tick < src[a].tick ? src[b++] : src[a++];
            while (a < am)
                dst[o++] = src[a++];
            while (b < bm)
                dst[o++] = src[b++];
            bound[nr++] = bound[i];
        }
        bound[nr] = n;
        runs = nr;
        smf_event *sw = src;
        src = dst;
        dst = sw;
    }
    if (src != f->events) {
        free(f->events);
        f->events = src;
        *event_cap = n;
    } else {
        free(tmp);
    }
    free(bound);
    return 0;
}

int smf_place_in_time(smf *f, tempo_found *tempos, size_t n_tempos, size_t *event_cap)
{
    if (build_tempo_map(f, tempos, n_tempos) != 0 || merge_tracks(f, event_cap) != 0)
        return -1;
    size_t next = 0;
    for (size_t i = 0; i < f->n_events; i++)
        f->events[i].time = tick_time(f, &next, f->events[i].tick);
    uint32_t last = 0;
    for (int i = 0; i < f->n_tracks; i++)
        if (f->tracks[i].end_tick > last)
            last = f->tracks[i].end_tick;
    next = 0;
    f->duration = tick_time(f, &next, last);
    return 0;
}
