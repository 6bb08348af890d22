/* takes.c: the last answers, kept with their seed and settings, listed, played again, written out. */
#include "daemon/takes.h"

#include <stdio.h>
#include <string.h>

#include "midi/smf.h"
#include "util/log.h"

take *takes_start(takes *ts, double when, uint64_t seed, const play_settings *play, unsigned replay_of)
{
    take *t = &ts->t[ts->last % TAKES_KEPT];
    ts->last++;
    t->number = ts->last;
    t->when = when;
    t->seed = seed;
    t->play = *play;
    t->replay_of = replay_of;
    t->n = 0;
    ts->cursor = 0;
    return t;
}

take *takes_replay(takes *ts, double when, unsigned number)
{
    const take *from = takes_find(ts, number);
    uint64_t seed = from->seed;
    play_settings play = from->play;
    unsigned cursor = ts->cursor;
    int n = from->n;
    take *t = takes_start(ts, when, seed, &play, number);
    if (t != from)
        memcpy(t->ev, from->ev, sizeof *t->ev * (size_t)n);
    t->n = n;
    ts->cursor = cursor;
    return t;
}

void takes_add(take *t, const cont_event *e)
{
    if (t && t->n < TAKE_EVENTS && e->kind != CONT_TIME)
        t->ev[t->n++] = *e;
}

void takes_cut(take *t, double at)
{
    if (!t)
        return;
    uint8_t held[128] = { 0 };  /* the pitch sounds (its note-on kept, no note-off yet) */
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        cont_event e = t->ev[i];
        int on = e.kind == CONT_NOTE_ON, p = e.pitch & 0x7F;
        if (on ? e.time >= at : e.time > at || !held[p])
            continue;           /* not struck before the stop, or the stop ended it */
        held[p] = (uint8_t)on;
        t->ev[n++] = e;
    }
    t->n = n;
    for (int p = 0; p < 128; p++)
        if (held[p] && t->n < TAKE_EVENTS)
            t->ev[t->n++] = (cont_event){ .time = at, .kind = CONT_NOTE_OFF, .pitch = (uint8_t)p };
}

const take *takes_find(const takes *ts, unsigned number)
{
    if (number == 0 || number > ts->last || ts->last - number >= TAKES_KEPT)
        return NULL;
    return &ts->t[(number - 1) % TAKES_KEPT];
}

/* Notes (note-ons) and length (its last event) of T. */
static void take_size(const take *t, int *notes, double *seconds)
{
    *notes = 0;
    *seconds = 0;
    for (int i = 0; i < t->n; i++) {
        *notes += t->ev[i].kind == CONT_NOTE_ON;
        if (t->ev[i].time > *seconds)
            *seconds = t->ev[i].time;
    }
}

void takes_list(const takes *ts, char *buf, size_t len)
{
    unsigned kept = ts->last < TAKES_KEPT ? ts->last : TAKES_KEPT;
    size_t used = (size_t)snprintf(buf, len, "%u take%s", kept, kept == 1 ? "" : "s");
    for (unsigned k = 0; k < kept && used < len; k++) {
        const take *t = takes_find(ts, ts->last - k);
        int notes;
        double seconds;
        take_size(t, &notes, &seconds);
        used += (size_t)snprintf(buf + used, len - used, "%s #%u at %.1f s, %.2f s, %d notes, seed %llu",
                                 k ? ";" : ":", t->number, t->when, seconds, notes,
                                 (unsigned long long)t->seed);
        if (t->replay_of && used < len)
            used += (size_t)snprintf(buf + used, len - used, " (replays #%u)", t->replay_of);
    }
}

int takes_save(const take *t, int channel, const char *path)
{
    static smf_event ev[TAKE_EVENTS];   /* the loop thread's; saving is rare */
    char name[32];
    size_t n = 0;
    for (int i = 0; i < t->n; i++) {
        const cont_event *e = &t->ev[i];
        int on = e->kind == CONT_NOTE_ON;
        ev[n++] = (smf_event){ .time = e->time, .status = (uint8_t)((on ? 0x90 : 0x80) | (channel - 1)),
                               .data1 = e->pitch, .data2 = (uint8_t)(on ? e->velocity : 0) };
    }
    snprintf(name, sizeof name, "take %u", t->number);
    smf_track_out track = { name, ev, n };
    return smf_write_file(path, &track, 1);
}
