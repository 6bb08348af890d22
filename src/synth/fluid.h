/* fluid.h: the FluidSynth output: a soundfont played through an audio driver. */
#ifndef CONTINUO_SYNTH_FLUID_H
#define CONTINUO_SYNTH_FLUID_H

#include "midi/stream.h"

/* An open synthesizer with its audio driver running; owned by the caller,
 * freed by synth_fluid_close. */
typedef struct synth_fluid synth_fluid;

/* Loads SOUNDFONT and starts audio DRIVER ("alsa", "pulseaudio" or "file";
 * "file" writes FILE as WAV, in real time, for headless use).  On failure
 * logs "cannot open soundfont PATH: cause" or "cannot start audio driver
 * NAME: cause" and returns NULL.  Without FluidSynth built in, always fails
 * with a clear error. */
synth_fluid *synth_fluid_open(const char *soundfont, const char *driver, const char *file);

/* Plays one channel message at once (thread-safe; never blocks for long). */
void synth_fluid_send(synth_fluid *s, const midi_msg *m);

/* Stops the driver (the file is complete afterwards) and frees all. NULL ok. */
void synth_fluid_close(synth_fluid *s);

#endif
