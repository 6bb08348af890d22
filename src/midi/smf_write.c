/* smf_write.c: a Standard MIDI File written all or nothing: the header and tempo track, then one chunk per track (smf_chunk.c). */
#include "midi/smf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "midi/smf_chunk.h"
#include "util/fileio.h"
#include "util/log.h"

/* The chunk of track T into AF's file; 0, or -1 (logged). */
static int write_track(atomic_file *af, const char *path, const smf_track_out *t)
{
    uint8_t *chunk;
    size_t n;

    if (smf_build_chunk(path, t, 0.0, &chunk, &n) != 0)
        return -1;
    int rc = fwrite(chunk, 1, n, af->fp) == n ? 0 : -1;
    free(chunk);
    if (rc != 0)
        log_error("cannot write %s: %s", path, strerror(errno ? errno : EIO));
    return rc;
}

int smf_write_file(const char *path, const smf_track_out *tracks, int n_tracks)
{
    uint8_t head[SMF_HEAD_BYTES];       /* MThd and the tempo track, as the journal's */
    atomic_file af;

    if (smf_check_tracks(path, tracks, n_tracks) != 0)
        return -1;
    if (atomic_file_open(&af, path) != 0)
        return -1;
    smf_head(head, n_tracks);
    if (fwrite(head, 1, sizeof head, af.fp) != sizeof head) {
        log_error("cannot write %s: %s", path, strerror(errno ? errno : EIO));
        atomic_file_abort(&af);
        return -1;
    }
    for (int t = 0; t < n_tracks; t++)
        if (write_track(&af, path, &tracks[t]) != 0) {
            atomic_file_abort(&af);
            return -1;
        }
    return atomic_file_commit(&af);
}
