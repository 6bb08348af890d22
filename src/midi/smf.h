/* smf.h: Standard MIDI File reader and writer (formats 0 and 1). */
#ifndef CONTINUO_SMF_H
#define CONTINUO_SMF_H

#include <stddef.h>
#include <stdint.h>

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

/* A file as read: every channel message of every track, merged by time
 * (stable: ties keep track order, then file order). SysEx and meta events
 * other than tempo, end-of-track and track name are skipped. */
typedef struct smf {
    int        format;          /* 0 or 1 */
    int        n_tracks;
    int        division;        /* ticks per quarter note; 0 when SMPTE */
    int        smpte_fps;       /* 24, 25, 29 (29.97) or 30 when SMPTE, else 0 */
    int        smpte_ticks_per_frame;
    smf_event *events;          /* n_events, sorted by time; owned */
    size_t     n_events;
    smf_tempo *tempos;          /* n_tempos, by tick; owned */
    size_t     n_tempos;
    double     duration;        /* seconds to the last event or end-of-track */
    int        n_warnings;      /* recoverable problems, each already logged */
} smf;

/* Reads PATH. On a bad file logs one line "PATH: byte N: what was wrong"
 * and returns -1 (OUT left empty). Recoverable problems (missing
 * end-of-track, ...) are logged as warnings and counted in n_warnings. */
int smf_read_file(const char *path, smf *out);
/* The same for a file already in memory; NAME is used in messages. */
int smf_read_mem(const uint8_t *data, size_t len, const char *name, smf *out);
void smf_free(smf *f);

/* A track to write: channel events on a time line in seconds (sorted). */
typedef struct smf_track_out {
    const char      *name;      /* track name meta event, or NULL */
    const smf_event *events;    /* borrowed; .tick and .track are ignored */
    size_t           n_events;
} smf_track_out;

/* Writes a format 1 file (format 0 when n_tracks == 1 is not required)
 * with division 500 and tempo 120 bpm, so one tick is exactly 1 ms.
 * Written all or nothing (temp file + rename); logs and returns -1 on error. */
int smf_write_file(const char *path, const smf_track_out *tracks, int n_tracks);

#endif
