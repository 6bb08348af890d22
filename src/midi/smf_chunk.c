/* smf_chunk.c: a Standard MIDI File's bytes built in memory: the header with its tempo track, and one MTrk chunk per track (the journal writes them a chunk at a time, smf_write.c a file at once). */
#include "midi/smf_chunk.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* Bytes of one chunk being built. */
typedef struct byte_buf {
    uint8_t *p;                 /* owned */
    size_t   n, cap;
} byte_buf;

static int buf_put(byte_buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
    return 0;
}

/* V < 2^28 (checked by the caller): at most 4 bytes, high groups first. */
static int buf_vlq(byte_buf *b, uint32_t v)
{
    uint8_t tmp[4];
    size_t n = 1;

    tmp[3] = v & 0x7F;
    while ((v >>= 7) != 0 && n < 4) {
        tmp[3 - n] = (uint8_t)(0x80 | (v & 0x7F));
        n++;
    }
    return buf_put(b, tmp + 4 - n, n);
}

#define WRITE_TICKS_PER_SECOND 1000.0
#define WRITE_MAX_TICK         0x0FFFFFFFu

int smf_check_tracks(const char *what, const smf_track_out *tracks, int n_tracks)
{
    if (n_tracks < 0 || n_tracks > 65534 || (n_tracks > 0 && !tracks)) {
        log_error("cannot write %s: %d tracks (expected 0 to 65534, in an array)", what, n_tracks);
        return -1;
    }
    for (int t = 0; t < n_tracks; t++) {
        double prev = 0.0;
        if (tracks[t].n_events && !tracks[t].events) {
            log_error("cannot write %s: track %d has events but no event array", what, t);
            return -1;
        }
        for (size_t i = 0; i < tracks[t].n_events; i++) {
            const smf_event *e = &tracks[t].events[i];
            if (e->status < 0x80 || e->status >= 0xF0 || e->data1 >= 0x80 || e->data2 >= 0x80) {
                log_error("cannot write %s: track %d event %zu is not a channel message (%02X %02X %02X)",
                          what, t, i, e->status, e->data1, e->data2);
                return -1;
            }
            if (!(e->time >= prev) || !(e->time * WRITE_TICKS_PER_SECOND < WRITE_MAX_TICK)) {
                log_error("cannot write %s: track %d event %zu has time %g s (events must be in time order, 0 to %u s)",
                          what, t, i, e->time, WRITE_MAX_TICK / 1000);
                return -1;
            }
            prev = e->time;
        }
    }
    return 0;
}

/* Track chunk body: name, events with running status, end-of-track,
 * appended to B. */
static int build_track_at(byte_buf *b, const smf_track_out *t)
{
    static const uint8_t end_of_track[] = { 0x00, 0xFF, 0x2F, 0x00 };
    int rc = 0;

    if (t->name) {
        size_t n = strlen(t->name);
        if (n > 65535)
            n = 65535;
        static const uint8_t name_head[] = { 0x00, 0xFF, 0x03 };
        rc |= buf_put(b, name_head, sizeof name_head);
        rc |= buf_vlq(b, (uint32_t)n);
        rc |= buf_put(b, t->name, n);
    }
    uint32_t prev = 0;
    uint8_t running = 0;
    for (size_t i = 0; i < t->n_events && rc == 0; i++) {
        const smf_event *e = &t->events[i];
        uint32_t tick = (uint32_t)lround(e->time * WRITE_TICKS_PER_SECOND);
        if (tick < prev)            /* rounding can not reorder sorted times; be safe */
            tick = prev;
        uint8_t msg[3];
        size_t n = 0;
        if (e->status != running)
            msg[n++] = e->status;
        msg[n++] = e->data1;
        if ((e->status & 0xE0) != 0xC0)
            msg[n++] = e->data2;
        rc |= buf_vlq(b, tick - prev);
        rc |= buf_put(b, msg, n);
        running = e->status;
        prev = tick;
    }
    rc |= buf_put(b, end_of_track, sizeof end_of_track);
    return rc;
}

void smf_head(uint8_t buf[SMF_HEAD_BYTES], int n_tracks)
{
    /* MThd, length 6, format 1, n_tracks + 1 tracks, 500 ticks per quarter;
     * the tempo track: 500000 us per quarter (07 A1 20), end-of-track. */
    static const uint8_t head[SMF_HEAD_BYTES] = {
        'M', 'T', 'h', 'd', 0, 0, 0, 6, 0, 1, 0, 1, 0x01, 0xF4,
        'M', 'T', 'r', 'k', 0, 0, 0, 11, 0x00, 0xFF, 0x51, 0x03, 0x07, 0xA1, 0x20, 0x00, 0xFF, 0x2F, 0x00,
    };
    memcpy(buf, head, SMF_HEAD_BYTES);
    buf[10] = (uint8_t)((n_tracks + 1) >> 8);
    buf[11] = (uint8_t)(n_tracks + 1);
}

int smf_build_chunk(const char *what, const smf_track_out *t, double t0, uint8_t **out, size_t *n)
{
    smf_event *shifted = t->n_events ? malloc(sizeof *shifted * t->n_events) : NULL;
    byte_buf b = { NULL, 0, 0 };
    if (t->n_events && !shifted) {
        log_error("cannot write %s: out of memory", what);
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < t->n_events; i++) {
        shifted[i] = t->events[i];
        shifted[i].time -= t0;
    }
    smf_track_out s = { t->name, shifted, t->n_events };
    int rc = smf_check_tracks(what, &s, 1), e = EINVAL;
    uint8_t head[8] = { 'M', 'T', 'r', 'k', 0, 0, 0, 0 };
    if (rc == 0 && (buf_put(&b, head, 8) != 0 || build_track_at(&b, &s) != 0)) {
        log_error("cannot write %s: out of memory", what);
        rc = -1;
        e = ENOMEM;
    }
    free(shifted);
    if (rc != 0) {
        free(b.p);
        errno = e;
        return -1;
    }
    size_t body = b.n - 8;
    b.p[4] = (uint8_t)(body >> 24);
    b.p[5] = (uint8_t)(body >> 16);
    b.p[6] = (uint8_t)(body >> 8);
    b.p[7] = (uint8_t)body;
    *out = b.p;
    *n = b.n;
    return 0;
}

int smf_track_chunk(const smf_track_out *t, double t0, uint8_t **out, size_t *n)
{
    return smf_build_chunk("a track", t, t0, out, n);
}
