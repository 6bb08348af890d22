/* smf_read.c: Standard MIDI File reader: the chunks and events of formats 0 and 1, checked byte by byte (smf_time.c puts them in seconds). */
#include "midi/smf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "midi/smf_time.h"
#include "util/fileio.h"
#include "util/log.h"

#define MAX_STORED_WARNINGS      16      /* warnings logged and kept in smf.warnings */
#define MAX_TRACK_NAME           256     /* bytes of a track name kept */

/* The state of one read: the input (borrowed) and what is being built. */
typedef struct reader {
    const uint8_t *data;        /* the file; borrowed */
    size_t         len;
    const char    *name;        /* for messages; borrowed */
    smf           *out;         /* being filled */
    size_t         event_cap;
    size_t         track_cap;
    tempo_found   *tempos;      /* owned until the map is built */
    size_t         n_tempos, tempo_cap;
    size_t         warn_len, warn_cap;
} reader;

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* Logs the one error line of a bad file: "NAME: byte OFF: what". */
__attribute__((format(printf, 3, 4)))
static void fail(const reader *r, size_t off, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_error("%s: byte %zu: %s", r->name, off, msg);
}

/* Appends LINE and a newline to the kept warning text; quietly stops when
 * memory runs out (the warning was logged anyway). */
static void keep_warning(reader *r, const char *line)
{
    size_t n = strlen(line);
    if (r->warn_len + n + 2 > r->warn_cap) {
        size_t cap = (r->warn_cap ? r->warn_cap * 2 : 256) + n + 2;
        char *p = realloc(r->out->warnings, cap);
        if (!p)
            return;
        r->out->warnings = p;
        r->warn_cap = cap;
    }
    memcpy(r->out->warnings + r->warn_len, line, n);
    r->warn_len += n;
    r->out->warnings[r->warn_len++] = '\n';
    r->out->warnings[r->warn_len] = '\0';
}

/* A recoverable problem at byte OFF: logged (the first few) and counted. */
__attribute__((format(printf, 3, 4)))
static void warn(reader *r, size_t off, const char *fmt, ...)
{
    char msg[512], line[600];
    va_list ap;

    r->out->n_warnings++;
    if (r->out->n_warnings > MAX_STORED_WARNINGS)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "byte %zu: %s", off, msg);
    log_warn("%s: %s", r->name, line);
    keep_warning(r, line);
}

/* Makes room for NEED elements of size ELEM in *P (capacity *CAP), growing
 * geometrically. NEED is bounded by the SMF_MAX_* limits, so no overflow. */
static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(*p, ncap * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = ncap;
    return 0;
}

/* Reads a variable-length quantity (at most 4 bytes, so < 2^28) at *POS,
 * not reading at or past END. WHAT names it in messages. */
static int read_vlq(const reader *r, size_t *pos, size_t end, uint32_t *val,
                    int track, const char *what)
{
    size_t p = *pos;
    uint32_t v = 0;

    for (int i = 0; i < 4; i++) {
        if (p >= end) {
            fail(r, *pos, "track %d: %s cut off by the end of the track", track, what);
            return -1;
        }
        uint8_t b = r->data[p++];
        v = v << 7 | (b & 0x7Fu);
        if (!(b & 0x80)) {
            *pos = p;
            *val = v;
            return 0;
        }
    }
    fail(r, *pos, "track %d: bad VLQ in %s (more than 4 bytes)", track, what);
    return -1;
}

/* Keeps the first track name of a track, printable ASCII only. */
static int set_track_name(reader *r, smf_track *t, const uint8_t *s, uint32_t n)
{
    if (t->name)
        return 0;
    if (n > MAX_TRACK_NAME)
        n = MAX_TRACK_NAME;
    t->name = malloc((size_t)n + 1);
    if (!t->name) {
        fail(r, 0, "out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        t->name[i] = (s[i] >= 0x20 && s[i] < 0x7F) ? (char)s[i] : '?';
    t->name[n] = '\0';
    return 0;
}

static int add_tempo(reader *r, size_t off, uint32_t tick, uint32_t usec)
{
    if (r->n_tempos >= SMF_MAX_TEMPOS) {
        fail(r, off, "more than %u tempo events", SMF_MAX_TEMPOS);
        return -1;
    }
    if (grow((void **)&r->tempos, &r->tempo_cap, r->n_tempos + 1, sizeof *r->tempos) != 0) {
        fail(r, off, "out of memory");
        return -1;
    }
    r->tempos[r->n_tempos] = (tempo_found){ tick, usec, (uint32_t)r->n_tempos };
    r->n_tempos++;
    return 0;
}

static int add_event(reader *r, size_t off, uint32_t tick, int track,
                     uint8_t status, uint8_t d1, uint8_t d2)
{
    smf *f = r->out;
    if (f->n_events >= SMF_MAX_EVENTS) {
        fail(r, off, "more than %u events", SMF_MAX_EVENTS);
        return -1;
    }
    if (grow((void **)&f->events, &r->event_cap, f->n_events + 1, sizeof *f->events) != 0) {
        fail(r, off, "out of memory");
        return -1;
    }
    f->events[f->n_events++] = (smf_event){ 0.0, tick, (uint16_t)track, status, d1, d2 };
    return 0;
}

/* A meta event (FF TYPE LEN DATA) whose type byte is at *POS. Sets *ENDED
 * at end-of-track. */
static int read_meta(reader *r, size_t *pos, size_t end, size_t ev_off,
                     int track, uint32_t tick, int *ended)
{
    smf_track *t = &r->out->tracks[track];
    size_t p = *pos;

    if (p >= end) {
        fail(r, ev_off, "track %d: meta event cut off by the end of the track", track);
        return -1;
    }
    uint8_t type = r->data[p++];
    size_t len_off = p;
    uint32_t mlen;
    if (read_vlq(r, &p, end, &mlen, track, "meta event length") != 0)
        return -1;
    if (mlen > end - p) {
        fail(r, len_off, "track %d: bad meta length %u (meta type 0x%02X): only %zu bytes left in the track",
             track, mlen, type, end - p);
        return -1;
    }
    const uint8_t *d = r->data + p;
    switch (type) {
    case 0x2F:                                  /* end of track */
        if (mlen != 0) {
            fail(r, len_off, "track %d: bad meta length %u for end-of-track (expected 0)", track, mlen);
            return -1;
        }
        *ended = 1;
        break;
    case 0x51:                                  /* set tempo */
        if (mlen != 3) {
            fail(r, len_off, "track %d: bad meta length %u for tempo (expected 3)", track, mlen);
            return -1;
        }
        {
            uint32_t usec = (uint32_t)d[0] << 16 | (uint32_t)d[1] << 8 | d[2];
            if (usec == 0)
                warn(r, ev_off, "track %d: tempo of 0 us per quarter note ignored", track);
            else if (add_tempo(r, ev_off, tick, usec) != 0)
                return -1;
        }
        break;
    case 0x03:                                  /* track name */
        if (set_track_name(r, t, d, mlen) != 0)
            return -1;
        break;
    default:                                    /* text, key, time signature, ... */
        break;
    }
    *pos = p + mlen;
    return 0;
}

/* Makes room for track number TRACK, whose chunk is [START, END), and
 * empties it; NULL when out of memory (reported). */
static smf_track *start_track(reader *r, size_t start, size_t end, int track)
{
    smf *f = r->out;
    if (grow((void **)&f->tracks, &r->track_cap, (size_t)track + 1, sizeof *f->tracks) != 0) {
        fail(r, start, "out of memory");
        return NULL;
    }
    smf_track *t = &f->tracks[track];
    memset(t, 0, sizeof *t);
    f->n_tracks = track + 1;
    /* Room for the events of a typical track (3 bytes each with running
     * status) at once, so large files are not copied by many reallocs. */
    size_t guess = f->n_events + (end - start) / 3;
    if (guess > SMF_MAX_EVENTS)
        guess = SMF_MAX_EVENTS;
    if (grow((void **)&f->events, &r->event_cap, guess, sizeof *f->events) != 0) {
        fail(r, start, "out of memory");
        return NULL;
    }
    return t;
}

/* The status byte at *POS into *STATUS (*POS moves past it), or the running
 * status when a data byte comes instead. */
static int read_status(reader *r, size_t *pos, int track, uint8_t running, uint8_t *status)
{
    uint8_t b = r->data[*pos];
    if (b & 0x80) {
        (*pos)++;
        *status = b;
    } else if (running) {
        *status = running;
    } else {
        fail(r, *pos, "track %d: running status with no status byte (data byte 0x%02X where a status was expected)",
             track, b);
        return -1;
    }
    return 0;
}

/* The data bytes of channel message STATUS (its status byte at ST_OFF) at
 * *POS, added as an event at TICK; *POS after them. */
static int read_channel_message(reader *r, size_t *pos, size_t end, size_t ev_off, size_t st_off,
                                int track, uint32_t tick, uint8_t status)
{
    const uint8_t *data = r->data;
    size_t p = *pos;
    size_t nd = (status & 0xE0) == 0xC0 ? 1 : 2;   /* program change, channel pressure: 1 */
    if (end - p < nd) {
        fail(r, st_off, "track %d: message 0x%02X needs %zu data bytes, past the end of the track",
             track, status, nd);
        return -1;
    }
    for (size_t i = 0; i < nd; i++)
        if (data[p + i] & 0x80) {
            fail(r, p + i, "track %d: status byte 0x%02X where a data byte of message 0x%02X was expected",
                 track, data[p + i], status);
            return -1;
        }
    if (add_event(r, ev_off, tick, track, status, data[p], nd == 2 ? data[p + 1] : 0) != 0)
        return -1;
    *pos = p + nd;
    return 0;
}

/* A SysEx or escape message at *POS (after its status byte): skipped. */
static int skip_sysex(reader *r, size_t *pos, size_t end, int track)
{
    size_t len_off = *pos;
    uint32_t slen;
    if (read_vlq(r, pos, end, &slen, track, "SysEx length") != 0)
        return -1;
    if (slen > end - *pos) {
        fail(r, len_off, "track %d: SysEx length %u goes past the end of the track (%zu bytes left)",
             track, slen, end - *pos);
        return -1;
    }
    *pos += slen;
    return 0;
}

/* One event of a track (delta time, then a message) at *POS; *TICK and
 * *RUNNING follow it, *ENDED is set by end-of-track. */
static int read_event(reader *r, size_t *pos, size_t end, int track, uint64_t *tick,
                      uint8_t *running, int *ended)
{
    size_t ev_off = *pos;
    uint32_t delta;
    if (read_vlq(r, pos, end, &delta, track, "delta time") != 0)
        return -1;
    *tick += delta;
    if (*tick > UINT32_MAX) {
        fail(r, ev_off, "track %d: time past 2^32 ticks", track);
        return -1;
    }
    if (*pos >= end) {
        fail(r, ev_off, "track %d: delta time with no event: data past the end of the track", track);
        return -1;
    }
    size_t st_off = *pos;
    uint8_t status;
    if (read_status(r, pos, track, *running, &status) != 0)
        return -1;
    if (status < 0xF0) {                        /* channel message */
        if (read_channel_message(r, pos, end, ev_off, st_off, track, (uint32_t)*tick, status) != 0)
            return -1;
        *running = status;
        return 0;
    }
    if (status == 0xFF)
        return read_meta(r, pos, end, ev_off, track, (uint32_t)*tick, ended);
    if (status == 0xF0 || status == 0xF7)       /* SysEx, escape */
        return skip_sysex(r, pos, end, track);
    fail(r, st_off, "track %d: status byte 0x%02X (system common or real-time) is not allowed in a MIDI file",
         track, status);
    return -1;
}

/* One MTrk chunk's events in [START, END) as track number TRACK. */
static int read_track(reader *r, size_t start, size_t end, int track)
{
    smf *f = r->out;
    smf_track *t = start_track(r, start, end, track);
    if (!t)
        return -1;
    size_t p = start, first_event = f->n_events;
    uint64_t tick = 0;
    uint8_t running = 0;
    int ended = 0;
    while (p < end && !ended)
        if (read_event(r, &p, end, track, &tick, &running, &ended) != 0)
            return -1;
    t->end_tick = (uint32_t)tick;
    t->n_events = f->n_events - first_event;
    if (!ended)
        warn(r, end, "track %d has no end-of-track event; read to the end of its chunk", track);
    else if (p < end)
        warn(r, p, "track %d: %zu bytes after its end-of-track ignored", track, end - p);
    return 0;
}

/* The file starts with "MThd" (an empty file or other bytes: not MIDI). */
static int check_magic(const reader *r)
{
    const uint8_t *d = r->data;
    if (r->len == 0) {
        fail(r, 0, "not a MIDI file (the file is empty)");
        return -1;
    }
    if (memcmp(d, "MThd", r->len < 4 ? r->len : 4) != 0) {
        char got[16] = "";
        for (size_t i = 0; i < 4 && i < r->len; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%02X", i ? " " : "", d[i]);
        fail(r, 0, "not a MIDI file (starts with %s, expected \"MThd\")", got);
        return -1;
    }
    return 0;
}

/* The header's DIVISION: ticks per quarter note, or SMPTE frames and ticks. */
static int read_division(reader *r, uint16_t division)
{
    smf *f = r->out;
    if (division & 0x8000) {
        int fps = -(int)(int8_t)(division >> 8);
        int tpf = division & 0xFF;
        if (fps != 24 && fps != 25 && fps != 29 && fps != 30) {
            fail(r, 12, "bad SMPTE frame rate %d (expected 24, 25, 29 or 30)", fps);
            return -1;
        }
        if (tpf == 0) {
            fail(r, 13, "SMPTE division with 0 ticks per frame");
            return -1;
        }
        f->smpte_fps = fps;
        f->smpte_ticks_per_frame = tpf;
    } else {
        if (division == 0) {
            fail(r, 12, "division of 0 ticks per quarter note");
            return -1;
        }
        f->division = division;
    }
    return 0;
}

/* The MThd chunk: sets format, division and *N_TRACKS; *POS after it. */
static int read_header(reader *r, size_t *pos, unsigned *n_tracks)
{
    smf *f = r->out;
    const uint8_t *d = r->data;

    if (check_magic(r) != 0)
        return -1;
    if (r->len < 14) {
        fail(r, r->len, "truncated header: the file has %zu bytes, a MIDI header needs 14", r->len);
        return -1;
    }
    uint32_t hlen = be32(d + 4);
    if (hlen < 6) {
        fail(r, 4, "bad header length %u (expected 6)", hlen);
        return -1;
    }
    if (hlen > r->len - 8) {
        fail(r, 4, "truncated header: header length %u goes past the end of the file", hlen);
        return -1;
    }
    unsigned format = be16(d + 8);
    *n_tracks = be16(d + 10);
    uint16_t division = be16(d + 12);
    if (format == 2) {
        fail(r, 8, "format 2 (sequential tracks) is not supported");
        return -1;
    }
    if (format > 2) {
        fail(r, 8, "unknown format %u (expected 0 or 1)", format);
        return -1;
    }
    f->format = (int)format;
    if (read_division(r, division) != 0)
        return -1;
    if (format == 0 && *n_tracks != 1)
        warn(r, 10, "format 0 file declares %u tracks (expected 1)", *n_tracks);
    *pos = 8 + (size_t)hlen;
    return 0;
}

static int printable_id(const uint8_t *id)
{
    for (int i = 0; i < 4; i++)
        if (id[i] < 0x20 || id[i] >= 0x7F)
            return 0;
    return 1;
}

/* What follows the declared tracks: whole chunks are skipped (an extra MTrk
 * with a warning), anything else is trailing garbage (a warning). */
static void read_trailer(reader *r, size_t pos, unsigned declared)
{
    while (pos < r->len) {
        size_t left = r->len - pos;
        if (left < 8 || !printable_id(r->data + pos) || be32(r->data + pos + 4) > left - 8) {
            warn(r, pos, "%zu bytes of trailing garbage after the last chunk ignored", left);
            return;
        }
        if (memcmp(r->data + pos, "MTrk", 4) == 0)
            warn(r, pos, "MTrk chunk beyond the %u tracks the header declares ignored", declared);
        pos += 8 + (size_t)be32(r->data + pos + 4);
    }
}

static int read_chunks(reader *r)
{
    size_t pos;
    unsigned declared;

    if (read_header(r, &pos, &declared) != 0)
        return -1;
    unsigned found = 0;
    while (pos < r->len && found < declared) {
        size_t left = r->len - pos;
        if (left < 8) {
            fail(r, pos, "truncated chunk header: %zu bytes left, a chunk header needs 8", left);
            return -1;
        }
        const uint8_t *id = r->data + pos;
        uint32_t clen = be32(id + 4);
        char name[16];
        if (printable_id(id))
            snprintf(name, sizeof name, "'%c%c%c%c'", id[0], id[1], id[2], id[3]);
        else
            snprintf(name, sizeof name, "%02X%02X%02X%02X", id[0], id[1], id[2], id[3]);
        if (clen > left - 8) {
            fail(r, pos + 4, "truncated chunk: chunk %s length %u goes past the end of the file (%zu bytes left)",
                 name, clen, left - 8);
            return -1;
        }
        if (memcmp(id, "MTrk", 4) == 0) {
            if (read_track(r, pos + 8, pos + 8 + clen, (int)found) != 0)
                return -1;
            found++;
        } else {
            log_debug("%s: byte %zu: chunk %s of %u bytes skipped", r->name, pos, name, clen);
        }
        pos += 8 + (size_t)clen;
    }
    if (found < declared)
        warn(r, pos, "the header declares %u tracks but the file has %u", declared, found);
    else
        read_trailer(r, pos, declared);
    return 0;
}

/* After all chunks: the time line (smf_time.c), then the count of the
 * warnings not kept. */
static int finish(reader *r)
{
    smf *f = r->out;
    if (smf_place_in_time(f, r->tempos, r->n_tempos, &r->event_cap) != 0) {
        fail(r, 0, "out of memory");
        return -1;
    }
    if (f->n_warnings > MAX_STORED_WARNINGS) {
        char line[96];
        snprintf(line, sizeof line, "... and %d more warnings", f->n_warnings - MAX_STORED_WARNINGS);
        log_warn("%s: %s", r->name, line);
        keep_warning(r, line);
    }
    return 0;
}

void smf_free(smf *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n_tracks; i++)
        free(f->tracks[i].name);
    free(f->tracks);
    free(f->events);
    free(f->tempos);
    free(f->warnings);
    memset(f, 0, sizeof *f);
}

int smf_read_mem(const uint8_t *data, size_t len, const char *name, smf *out)
{
    reader r;

    memset(out, 0, sizeof *out);
    memset(&r, 0, sizeof r);
    r.data = data;
    r.len = data ? len : 0;
    r.name = name ? name : "(memory)";
    r.out = out;
    int rc = read_chunks(&r);
    if (rc == 0)
        rc = finish(&r);
    free(r.tempos);
    if (rc != 0)
        smf_free(out);
    return rc;
}

int smf_read_file(const char *path, smf *out)
{
    uint8_t *data;
    size_t len;

    memset(out, 0, sizeof *out);
    if (file_read_all(path, &data, &len) != 0)
        return -1;
    int rc = smf_read_mem(data, len, path, out);
    free(data);
    return rc;
}

const char *midi_pitch_name(int pitch, char *buf, size_t size)
{
    static const char *const names[12] = { "C", "C#", "D", "D#", "E", "F", "F#", "G",
                                           "G#", "A", "A#", "B" };
    snprintf(buf, size, "%s%d", names[pitch % 12], pitch / 12 - 1);
    return buf;
}
