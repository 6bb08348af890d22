/* fileio.h: whole-file reads and all-or-nothing writes (temp file + rename). */
#ifndef CONTINUO_FILEIO_H
#define CONTINUO_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Reads all of PATH into a new buffer (caller frees with free()).  On error
 * logs "cannot read PATH: cause" and returns -1. */
int file_read_all(const char *path, uint8_t **data, size_t *len);

/* A file written all or nothing: data goes to "PATH.tmp-XXXXXX" beside PATH
 * and is renamed over PATH only by atomic_file_commit, after fflush and
 * fsync succeed.  atomic_file_abort (or a failed commit) removes the temp
 * file, so a reader never sees a half-written PATH.  PATH "-" writes to
 * stdout directly. */
typedef struct atomic_file {
    FILE *fp;           /* write through this; owned */
    char *path;         /* final name; owned */
    char *tmp_path;     /* temp name, NULL for stdout; owned */
} atomic_file;

int atomic_file_open(atomic_file *af, const char *path);
int atomic_file_commit(atomic_file *af);   /* closes; logs and returns -1 on error */
void atomic_file_abort(atomic_file *af);   /* closes and removes the temp file */

/* Convenience: writes LEN bytes to PATH all or nothing. */
int file_write_atomic(const char *path, const void *data, size_t len);

#endif
