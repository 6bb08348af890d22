/* journal.h: a MIDI file that grows a track at a time and is a valid file after a crash at any moment. */
#ifndef CONTINUO_MIDI_JOURNAL_H
#define CONTINUO_MIDI_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "midi/smf.h"

/* A session journal file: format 1, one tick a millisecond (as
 * smf_write_file), the tempo track first, then one track per stretch of
 * one part's playing (named "player" or "continuo"), each on the file's
 * time line from its start.  A track is appended thus: its chunk written
 * past the end of what the header counts, fdatasync, then the header's
 * track count (2 bytes, one sector) rewritten, fdatasync.  Whatever
 * moment the process or the machine stops, the header counts only
 * complete tracks: the file opens (in mido, continuo inspect, a DAW) with
 * every track appended before, and what the crash left past them is
 * ignored (a reader may warn of trailing bytes) and overwritten by the
 * next append. */
typedef struct journal_file {
    int      fd;            /* -1: closed */
    char     path[1024];
    uint64_t end;           /* bytes the header's tracks cover */
    unsigned n_tracks;      /* tracks after the tempo track */
} journal_file;

/* Tracks a journal file takes (the header counts at most 65535). */
#define JOURNAL_MAX_TRACKS 65000

/* A new journal file in DIR named for START (UTC): session-YYYYMMDD-HHMMSS.mid
 * (-2, -3, ... if that exists), with the header and tempo track, synced,
 * and its directory entry synced.  0, or -1 with errno set (nothing logged:
 * the caller says it once). */
int  journal_file_create(journal_file *j, const char *dir, time_t start);
/* Appends track T (times in seconds of the file's time line, >= 0), as
 * above.  0, or -1 with errno set (ENOSPC, EROFS, EIO, ENOMEM...): the
 * file is still as it was, and the same append may be tried again; EINVAL:
 * T itself cannot be written (smf_track_chunk says why). */
int  journal_file_append(journal_file *j, const smf_track_out *t);
void journal_file_close(journal_file *j);

/* The session files in DIR, oldest first (their names sort by time):
 * calls FN(PATH, SIZE, MTIME, USER) for each; returns how many, or -1
 * (errno set) when DIR cannot be read. */
typedef void (*journal_file_fn)(const char *path, uint64_t size, time_t mtime, void *user);
int  journal_list(const char *dir, journal_file_fn fn, void *user);
/* Removes the oldest session files of DIR (never KEEP, the one being
 * written) while they are older than MAX_DAYS (0: no limit) or the
 * folder's session files hold more than MAX_BYTES (0: no limit).
 * Returns how many it removed. */
int  journal_prune(const char *dir, const char *keep, double max_days, uint64_t max_bytes);

#endif
