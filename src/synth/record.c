/* record.c: the session recording, kept in memory and written all or nothing. */
#include "synth/record.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

int recorder_init(recorder *r, size_t reserve, size_t max_events)
{
    memset(r, 0, sizeof *r);
    r->max_events = max_events;
    for (int t = 0; t < RECORD_TRACKS; t++) {
        r->ev[t] = malloc(reserve * sizeof *r->ev[t]);
        if (!r->ev[t]) {
            log_error("cannot start the session recording: out of memory");
            recorder_free(r);
            return -1;
        }
        r->cap[t] = reserve;
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
    if (r->n[track] == r->cap[track]) {
        size_t ncap = r->cap[track] ? r->cap[track] * 2 : 1024;
        if (ncap > r->max_events)
            ncap = r->max_events;
        smf_event *nev = ncap > r->cap[track] ? realloc(r->ev[track], ncap * sizeof *nev) : NULL;
        if (!nev) {
            r->dropped++;
            return -1;
        }
        r->ev[track] = nev;
        r->cap[track] = ncap;
    }
    smf_event *e = &r->ev[track][r->n[track]++];
    memset(e, 0, sizeof *e);
    e->time = time < 0 ? 0 : time;
    e->track = (uint16_t)track;
    e->status = m->status;
    e->data1 = m->data1;
    e->data2 = m->data2;
    return 0;
}

int recorder_save(const recorder *r, const char *path)
{
    smf_track_out tracks[RECORD_TRACKS] = {
        { "player", r->ev[RECORD_PLAYER], r->n[RECORD_PLAYER] },
        { "continuo", r->ev[RECORD_MODEL], r->n[RECORD_MODEL] },
    };
    return smf_write_file(path, tracks, RECORD_TRACKS);
}

size_t recorder_count(const recorder *r, int track)
{
    return track >= 0 && track < RECORD_TRACKS ? r->n[track] : 0;
}
