/* journal.h: a session's MIDI file, three tracks at every moment, and the append-only log beside it that keeps it whole through a crash. */
#ifndef CONTINUO_MIDI_JOURNAL_H
#define CONTINUO_MIDI_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "midi/smf.h"

/* A session journal is two files in its folder:
 *
 * - session-YYYYMMDD-HHMMSS.mid, the session file: format 1, one tick a
 *   millisecond (as smf_write_file), three tracks: the tempo track,
 *   "player" and "continuo" (a part that has not played is an empty named
 *   track).  It is only ever replaced whole (written beside it, synced,
 *   renamed over it), so a reader (a DAW, mido, `continuo inspect`,
 *   `adapt`) finds three tracks whenever it opens it.
 *
 * - .session-YYYYMMDD-HHMMSS.log, its log (hidden: not a file for a
 *   reader to open): a MIDI file too, appended a track (one part's
 *   stretch of playing) at a time: the chunk past the end the header
 *   counts, fdatasync, then the header's track count (2 bytes, one
 *   sector) rewritten, fdatasync.  Whenever the process or the machine
 *   stops, the log counts only complete tracks.  It always holds the
 *   whole session: a fold writes the session file from it and then
 *   replaces the log by the same three tracks (the way redis rewrites its
 *   append-only file), so folding again after a crash anywhere in a fold
 *   gives the same file; nothing is counted twice.  The writer holds an
 *   exclusive flock on its log: recovery leaves a log alone while a
 *   service writes it.
 *
 * Appends are the hot path (one chunk, two syncs); folds rewrite the
 * session and run when the writer chooses (a pause, a new file, the
 * stop).  A clean close folds and removes the log; a crash leaves it, and
 * journal_recover folds it at the next start. */
typedef struct journal_file {
    int      fd;            /* the log, flocked; -1: closed */
    char     dir[1024];
    char     path[1024];    /* the session file */
    char     log_path[1040];
    uint64_t end;           /* bytes of the log the header's tracks cover */
    unsigned n_tracks;      /* tracks of the log after the tempo track */
    unsigned appended;      /* tracks appended since the file was made */
    int      folded;        /* the session file holds all the log holds */
} journal_file;

/* Tracks a log takes before it must be folded (the header counts at most 65535). */
#define JOURNAL_MAX_TRACKS 65000

/* A new session in DIR named for START (UTC): session-YYYYMMDD-HHMMSS.mid
 * (-2, -3, ... if that exists) with its two empty parts, and its log; both
 * synced, and the folder.  0, or -1 with errno set (nothing logged: the
 * caller says it once). */
int  journal_file_create(journal_file *j, const char *dir, time_t start);
/* Appends track T (named "player" or "continuo"; times in seconds of the
 * session's time line, >= 0) to the log, as above.  0, or -1 with errno
 * set (ENOSPC, EROFS, EIO, ENOMEM...): the log is still as it was, and the
 * same append may be tried again; EINVAL: T itself cannot be written
 * (smf_track_chunk says why); EFBIG: the log is full, fold it first. */
int  journal_file_append(journal_file *j, const smf_track_out *t);
/* Writes the session file from the log and compacts the log to the same
 * three tracks (nothing to do when nothing was appended since).  0, or -1
 * with errno set: the files are as before (or folded, but the folder not
 * yet synced), and the fold may be tried again. */
int  journal_file_fold(journal_file *j);
/* Folds, removes the log (and both files when nothing was ever appended),
 * and closes.  0, or -1 with errno set when the fold failed: the log stays
 * for journal_recover. */
int  journal_file_close(journal_file *j);

/* Folds every log in DIR that no service holds (a crash left it) into its
 * session file and removes it; a log with nothing in it goes with its
 * session file.  Returns how many sessions it folded; a log that does not
 * read stays as it is (logged: the file and the byte). */
int  journal_recover(const char *dir);
/* The file that holds all of SESSION's playing: its log while there is one
 * (a service still writes it, or a crash left it), else SESSION itself;
 * into BUF (LEN bytes).  Returns BUF. */
const char *journal_read_path(const char *session, char *buf, size_t len);

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
