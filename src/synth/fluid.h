/* fluid.h: the FluidSynth output: a soundfont played through an audio driver, or rendered offline. */
#ifndef CONTINUO_SYNTH_FLUID_H
#define CONTINUO_SYNTH_FLUID_H

#include <stddef.h>
#include <stdint.h>

#include "midi/stream.h"

/* An open synthesizer, with its audio driver running when it has one;
 * owned by the caller, freed by synth_fluid_close. */
typedef struct synth_fluid synth_fluid;

/* What to open; every string is borrowed for the call only. */
typedef struct synth_fluid_opts {
    const char *soundfont;  /* SoundFont file; NULL: none (silent, for probing a driver) */
    const char *driver;     /* an audio driver of the installed FluidSynth ("alsa",
                               "jack", "pulseaudio", "sdl2", "oss", "file", ...);
                               NULL: none (synth_fluid_write renders) */
    const char *device;     /* the driver's device (audio.<driver>.device; for jack
                               the server name); NULL or "": the driver's default */
    const char *file;       /* driver "file": the WAV it writes (in real time) */
    double      gain;       /* 0..10 */
    int         lazy_samples; /* 1: load a preset's samples only when a channel
                               selects it (a General MIDI soundfont opens in a
                               fraction of the time; the selecting thread then
                               reads the disk, so not for the live service) */
    const char *advice;     /* appended to a driver error: what to try instead
                               (e.g. "output=alsa ..."); NULL: none */
} synth_fluid_opts;

/* Loads the soundfont and starts the audio driver.  On failure logs one
 * error and returns NULL: "cannot open soundfont PATH: cause", or "cannot
 * start audio driver NAME (device DEV): cause" followed by the drivers
 * this FluidSynth has and O->advice.  Without FluidSynth built in, always
 * fails with a clear error. */
synth_fluid *synth_fluid_open(const synth_fluid_opts *o);

/* Plays one channel message at once (thread-safe; never blocks for long). */
void synth_fluid_send(synth_fluid *s, const midi_msg *m);

/* Sets the output's loudness (linear, FluidSynth's synth.gain) at once,
 * sounding notes included. */
void synth_fluid_set_gain(synth_fluid *s, double gain);

/* Ends every note on every channel at once: all notes off and all sound off. */
void synth_fluid_silence(synth_fluid *s);

/* Renders the next FRAMES stereo frames, interleaved 16-bit, into OUT (a
 * synth opened without a driver).  Returns 0, or -1 (logged). */
int synth_fluid_write(synth_fluid *s, int16_t *out, int frames);

/* The output sample rate in Hz. */
int synth_fluid_rate(const synth_fluid *s);

/* Stops the driver (a file driver's file is complete afterwards) and frees
 * all.  NULL is fine. */
void synth_fluid_close(synth_fluid *s);

/* The audio drivers the installed FluidSynth has, as it reports them, into
 * BUF as "alsa, file, jack, ..." (empty without FluidSynth).  Returns BUF. */
const char *synth_fluid_drivers(char *buf, size_t len);

/* Tries to start audio driver DRIVER on DEVICE (NULL or "": its default)
 * with a silent synth, and stops it.  Returns 0 when it opens, else -1
 * with the cause in WHY (FluidSynth's own words when it gave any); logs
 * nothing.  The libraries behind a driver may print to stderr and JACK
 * may try to start a server: `continuo doctor` calls it in a child. */
int synth_fluid_probe(const char *driver, const char *device, char *why, size_t len);

/* 1 when the installed FluidSynth has audio driver NAME. */
int synth_fluid_has_driver(const char *name);

#endif
