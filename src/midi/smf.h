/* smf.h: Standard MIDI File reader (smf_read.c, smf_time.c) and writer (smf_chunk.c, smf_write.c), formats 0 and 1. */
#ifndef CONTINUO_SMF_H
#define CONTINUO_SMF_H

#include <stddef.h>
#include <stdint.h>

/* Limits against hostile files: a file with more is rejected. */
#define SMF_MAX_EVENTS  (1u << 23)  /* channel events in all tracks together */
#define SMF_MAX_TEMPOS  (1u << 20)  /* tempo (FF 51) events */

/* One channel-voice message on the file's merged time line. */
typedef struct smf_event {
    double   time;      /* seconds from the start of the file (tempo map applied) */
    uint32_t tick;      /* absolute tick within its track */
    uint16_t track;     /* index of the MTrk chunk it came from */
    uint8_t  status;    /* 0x80..0xEF: message type | channel */
    uint8_t  data1;     /* key / controller / program; 0 if unused */
    uint8_t  data2;     /* velocity / value; 0 if unused */
} smf_event;

/* A change of tempo (FF 51) in the tempo map. */
typedef struct smf_tempo {
    uint32_t tick;
    double   time;              /* seconds at which it takes effect */
    uint32_t usec_per_quarter;
} smf_tempo;

/* One MTrk chunk as read. */
typedef struct smf_track {
    char    *name;              /* first track name (FF 03), non-printable bytes
                                   shown as '?'; NULL if none; owned */
    size_t   n_events;          /* channel events in this track */
    uint32_t end_tick;          /* tick of its end-of-track (or last event) */
} smf_track;

/* A file as read: every channel message of every track, merged by time
 * (stable: ties keep track order, then file order). The tempo map is global:
 * a tempo event in any track applies to all. SysEx and meta events other
 * than tempo, end-of-track and track name are skipped. Running status is
 * kept across meta and SysEx events (as many writers expect). */
typedef struct smf {
    int        format;          /* 0 or 1 */
    int        n_tracks;        /* MTrk chunks read */
    smf_track *tracks;          /* n_tracks; owned */
    int        division;        /* ticks per quarter note; 0 when SMPTE */
    int        smpte_fps;       /* 24, 25, 29 (29.97) or 30 when SMPTE, else 0 */
    int        smpte_ticks_per_frame;
    smf_event *events;          /* n_events, sorted by time; owned */
    size_t     n_events;
    smf_tempo *tempos;          /* n_tempos, by tick (one per tick: the last
                                   in file order wins); owned */
    size_t     n_tempos;
    double     duration;        /* seconds to the last event or end-of-track */
    int        n_warnings;      /* recoverable problems, each already logged */
    char      *warnings;        /* their text, one per line (the first few);
                                   NULL if none; owned */
} smf;

/* Reads PATH. On a bad file logs one line "PATH: byte N: what was wrong"
 * and returns -1 (OUT left empty, nothing to free). Recoverable problems
 * (missing end-of-track, trailing garbage, ...) are logged as warnings and
 * counted in n_warnings. On success the caller frees OUT with smf_free. */
int smf_read_file(const char *path, smf *out);
/* The same for a file already in memory (borrowed); NAME is used in messages. */
int smf_read_mem(const uint8_t *data, size_t len, const char *name, smf *out);
void smf_free(smf *f);

/* Scientific pitch name of MIDI pitch 0..127 ("C4" for 60, "C#-1" for 1)
 * into BUF; returns BUF. */
const char *midi_pitch_name(int pitch, char *buf, size_t size);

/* A track to write: channel events on a time line in seconds (sorted). */
typedef struct smf_track_out {
    const char      *name;      /* track name meta event, or NULL */
    const smf_event *events;    /* borrowed; .tick and .track are ignored */
    size_t           n_events;
} smf_track_out;

/* Writes a format 1 file with division 500 and tempo 120 bpm (500000 us per
 * quarter), so one tick is exactly 1 ms: a tempo track first, then one track
 * per TRACKS entry, each event at tick lround(time * 1000). Events must be
 * channel messages (status 0x80..0xEF, data < 0x80) in time order with
 * 0 <= time < 268435 s. Written all or nothing (temp file + rename); logs
 * and returns -1 on error. */
int smf_write_file(const char *path, const smf_track_out *tracks, int n_tracks);

/* The MTrk chunk (its 8-byte header included) that smf_write_file writes
 * for T, with its times less T0 seconds (events before T0 are an error),
 * into *OUT (malloc'd; the caller frees it) of *N bytes: for files written
 * a chunk at a time (midi/journal.h).  0, or -1 (logged) with errno EINVAL
 * (events no file can hold: out of time order, not channel messages) or
 * ENOMEM. */
int smf_track_chunk(const smf_track_out *t, double t0, uint8_t **out, size_t *n);
/* The header and tempo track smf_write_file starts with, declaring
 * N_TRACKS tracks after the tempo track, into BUF (SMF_HEAD_BYTES). */
#define SMF_HEAD_BYTES 33
void smf_head(uint8_t buf[SMF_HEAD_BYTES], int n_tracks);

#endif
