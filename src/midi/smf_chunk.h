/* smf_chunk.h: the chunk builder smf_track_chunk and smf_write_file share (private to src/midi). */
#ifndef CONTINUO_SMF_CHUNK_H
#define CONTINUO_SMF_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "midi/smf.h"

/* Checks TRACKS (N_TRACKS) before anything is written: channel messages in
 * time order within what a file can hold.  0, or -1 with the first problem
 * logged as "cannot write WHAT: ...". */
int smf_check_tracks(const char *what, const smf_track_out *tracks, int n_tracks);

/* smf_track_chunk's chunk, its messages naming WHAT (a path, "a track"). */
int smf_build_chunk(const char *what, const smf_track_out *t, double t0, uint8_t **out, size_t *n);

#endif
