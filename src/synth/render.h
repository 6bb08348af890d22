/* render.h: timed MIDI messages through FluidSynth: rendered offline into a WAV file, or played in real time. */
#ifndef CONTINUO_SYNTH_RENDER_H
#define CONTINUO_SYNTH_RENDER_H

#include <signal.h>
#include <stddef.h>

#include "midi/smf.h"
#include "synth/fluid.h"

/* What a render took. */
typedef struct synth_render_stats {
    double music_s;     /* time of the last message */
    double audio_s;     /* length of the WAV: the music and its release tail */
    double load_s;      /* time the soundfont took to load */
    double wall_s;      /* time the rendering took, after it */
    double peak_dbfs;   /* loudest sample, dBFS (-inf for silence) */
} synth_render_stats;

/* Renders EV (N channel messages sorted by time; .time in seconds, the
 * other fields as in smf_event) through a synth opened with O (O->driver
 * is ignored: no audio device is used), as fast as the CPU allows, into a
 * 16-bit stereo WAV file at PATH, written all or nothing.  The file ends
 * when the sound after the last message has decayed below -80 dBFS (at
 * most 3 s later).  Shows a progress bar on a terminal.  Fills STATS when
 * not NULL.  Returns 0, or -1 (logged: the file or the synth and why). */
int synth_render_wav(const synth_fluid_opts *o, const smf_event *ev, size_t n, const char *path,
                     synth_render_stats *stats);

/* Plays EV in real time through S (opened with an audio driver; borrowed),
 * with a progress bar on a terminal, then lets the last notes ring out
 * (1.5 s).  Returns early when *STOP becomes nonzero (a signal handler
 * sets it); every note is silenced before it returns either way.  Returns
 * 1 when stopped, else 0. */
int synth_play(synth_fluid *s, const smf_event *ev, size_t n, volatile sig_atomic_t *stop);

#endif
