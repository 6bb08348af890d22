/* record.c: the session recording, the last keep_minutes of it in fixed rings, written all or nothing. */
#include "synth/record.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

int recorder_init(recorder *r, size_t cap, double keep_s)
{
    memset(r, 0, sizeof *r);
    r->cap = cap ? cap : 1;
    r->keep_s = keep_s;
    for (int t = 0; t < RECORD_TRACKS; t++) {
        /* calloc'd and written once: every page is resident from the start */
        r->ev[t] = calloc(r->cap, sizeof *r->ev[t]);
        if (!r->ev[t]) {
            log_error("cannot start the session recording: out of memory (%zu events a track)", r->cap);
            recorder_free(r);
            return -1;
        }
        memset(r->ev[t], 0, r->cap * sizeof *r->ev[t]);
    }
    return 0;
}

void recorder_free(recorder *r)
{
    for (int t = 0; t < RECORD_TRACKS; t++)
        free(r->ev[t]);
    memset(r, 0, sizeof *r);
}

int recorder_add(recorder *r, int track, double time, const midi_msg *m)
{
    if (track < 0 || track >= RECORD_TRACKS || !midi_msg_is_channel(m))
        return -1;
    smf_event *ring = r->ev[track];
    /* older than keep_s, or no room: the oldest go */
    while (r->n[track] > 0 && r->keep_s > 0 && time - ring[r->head[track]].time > r->keep_s) {
        r->head[track] = (r->head[track] + 1) % r->cap;
        r->n[track]--;
    }
    if (r->n[track] == r->cap) {
        r->head[track] = (r->head[track] + 1) % r->cap;
        r->n[track]--;
        r->dropped++;
    }
    smf_event *e = &ring[(r->head[track] + r->n[track]++) % r->cap];
    memset(e, 0, sizeof *e);
    e->time = time < 0 ? 0 : time;
    e->track = (uint16_t)track;
    e->status = m->status;
    e->data1 = m->data1;
    e->data2 = m->data2;
    return 0;
}

static void reverse(smf_event *a, size_t lo, size_t hi)     /* [lo, hi) */
{
    while (lo + 1 < hi) {
        smf_event t = a[lo];
        a[lo++] = a[--hi];
        a[hi] = t;
    }
}

/* Ring TRACK in order from index 0, in place (three reversals). */
static void straighten(recorder *r, int track)
{
    size_t h = r->head[track];
    if (h == 0)
        return;
    reverse(r->ev[track], 0, h);
    reverse(r->ev[track], h, r->cap);
    reverse(r->ev[track], 0, r->cap);
    r->head[track] = 0;
}

/* EV (N, in order) without the note-offs (and note-ons at velocity 0)
 * whose note-on left the ring, compacted in place; returns how many are
 * left. */
static size_t drop_orphans(smf_event *ev, size_t n)
{
    uint8_t on[16][128];
    size_t k = 0;
    memset(on, 0, sizeof on);
    for (size_t i = 0; i < n; i++) {
        int type = ev[i].status & 0xF0, ch = ev[i].status & 0x0F, p = ev[i].data1;
        int is_on = type == 0x90 && ev[i].data2 > 0, is_off = type == 0x80 || (type == 0x90 && ev[i].data2 == 0);
        if (is_off && !on[ch][p])
            continue;
        if (is_on || is_off)
            on[ch][p] = (uint8_t)is_on;
        ev[k++] = ev[i];
    }
    return k;
}

int recorder_save(recorder *r, const char *path)
{
    for (int t = 0; t < RECORD_TRACKS; t++) {
        straighten(r, t);
        r->n[t] = drop_orphans(r->ev[t], r->n[t]);
    }
    smf_track_out tracks[RECORD_TRACKS] = {
        { "player", r->ev[RECORD_PLAYER], r->n[RECORD_PLAYER] },
        { "continuo", r->ev[RECORD_MODEL], r->n[RECORD_MODEL] },
    };
    return smf_write_file(path, tracks, RECORD_TRACKS);
}
