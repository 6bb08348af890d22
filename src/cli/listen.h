/* listen.h: `--play` and `--wav FILE` of continue and demo: the music through FluidSynth, to the speakers or a WAV file. */
#ifndef CONTINUO_CLI_LISTEN_H
#define CONTINUO_CLI_LISTEN_H

#include "midi/smf.h"

typedef struct listen_opts {
    int         play;   /* --play: through the audio device, in real time */
    const char *wav;    /* --wav FILE: rendered offline; NULL: none (borrowed) */
} listen_opts;

/* The help lines of the two options. */
extern const char listen_usage[];

/* When ARGV[*I] is --play or --wav FILE: records it in O, moves *I to its
 * last argument and returns 1; returns 0 for any other argument, and -1
 * after printing "continuo CMD: --wav needs a file name". */
int listen_parse(const char *cmd, int argc, char **argv, int *i, listen_opts *o);

/* Renders the tracks (merged by time) to O->wav, then plays them when
 * O->play, with the soundfont, audio_driver, audio_device and gain of the
 * config file `continuo serve` reads (or their defaults).  Prints what it
 * wrote; Ctrl-C stops the playing and silences it.  Returns 0, or -1
 * (logged, naming the file, soundfont or driver and what to try). */
int listen_output(const listen_opts *o, const smf_track_out *tracks, int n_tracks);

#endif
