/* listen.h: `--play` and `--wav FILE` of continue and demo: the music through FluidSynth, to the speakers or a WAV file. */
#ifndef CONTINUO_CLI_LISTEN_H
#define CONTINUO_CLI_LISTEN_H

#include "cli/opts.h"
#include "midi/smf.h"

typedef struct listen_opts {
    int         play;   /* --play: through the audio device, in real time */
    const char *wav;    /* --wav FILE: rendered offline; NULL: none (borrowed) */
} listen_opts;

/* The two options' rows of an option table (opts.h), into O. */
#define LISTEN_OPTIONS(o) \
    CLI_FILE("wav", 0, "FILE", &(o)->wav, \
             "also render the music to a WAV file through FluidSynth,\n" \
             "offline (faster than real time)"), \
    CLI_FLAG("play", 0, &(o)->play, \
             "also play it through FluidSynth to the audio device\n" \
             "(Ctrl-C stops); soundfont, audio_driver, audio_device and\n" \
             "gain come from the config file `continuo serve` reads")

/* Renders the tracks (merged by time) to O->wav, then plays them when
 * O->play, with the soundfont, audio_driver, audio_device and gain of the
 * config file `continuo serve` reads (or their defaults).  Prints what it
 * wrote; Ctrl-C stops the playing and silences it.  Returns 0, or -1
 * (logged, naming the file, soundfont or driver and what to try). */
int listen_output(const listen_opts *o, const smf_track_out *tracks, int n_tracks);

#endif
