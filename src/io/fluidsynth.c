/* fluidsynth.c: the "fluidsynth" output: the built-in synthesizer (src/synth/fluid.c) behind the backend table. */
#include "config.h"

#include "io/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/fluid.h"
#include "util/log.h"

/* Setting KEY of the port being opened into BUF, or DEF when there is none
 * (opened without settings: a silent synthesizer with no audio driver). */
static const char *setting(const midi_port *p, const char *key, const char *def, char *buf, size_t len)
{
    const char *v = p->settings ? p->settings->get(p->settings->user, key, buf, len) : NULL;
    return v ? v : def;
}

/* Opens the synthesizer the settings describe; with on_missing_soundfont =
 * midi-only one that cannot start leaves the port open and silent (priv
 * NULL).  synth_fluid_open logs the cause itself: ERR stays empty. */
static int fs_open(midi_port *p, const char *arg, char *err, size_t errlen)
{
    char sf[1024], drv[32], dev[1024], file[1024], gain[32], missing[32];
    if (*arg) {
        snprintf(err, errlen, "takes no argument (soundfont and audio_driver are settings)");
        return -1;
    }
    synth_fluid_opts so = {
        .soundfont = setting(p, "soundfont", NULL, sf, sizeof sf),
        .driver = setting(p, "audio_driver", NULL, drv, sizeof drv),
        .device = setting(p, "audio_device", NULL, dev, sizeof dev),
        .file = setting(p, "audio_file", NULL, file, sizeof file),
        .gain = strtod(setting(p, "gain", "0.2", gain, sizeof gain), NULL),
        .advice = "output=alsa to play through a DAW or another synth (continuo:out), "
                  "or on_missing_soundfont=midi-only to go on without sound",
    };
    p->priv = synth_fluid_open(&so);
    if (p->priv)
        return 0;
    if (strcmp(setting(p, "on_missing_soundfont", "error", missing, sizeof missing), "midi-only") == 0) {
        log_warn("going on without sound from FluidSynth (on_missing_soundfont = midi-only)");
        return 0;
    }
    err[0] = '\0';
    return -1;
}

static void fs_close(midi_port *p)
{
    synth_fluid_close(p->priv);
}

static int fs_write(midi_port *p, const midi_msg *msg)
{
    if (p->priv)
        synth_fluid_send(p->priv, msg);
    return 0;
}

static void fs_update(midi_port *p, const char *key, const char *value)
{
    if (p->priv && strcmp(key, "gain") == 0)
        synth_fluid_set_gain(p->priv, strtod(value, NULL));
}

const midi_backend midi_backend_fluidsynth = {
    .name = "fluidsynth",
    .usage = "fluidsynth (no argument: the settings soundfont, audio_driver, audio_device, "
             "audio_file, gain)",
    .dirs = MIDI_OUT,
    .open = fs_open,
    .close = fs_close,
    .write = fs_write,
    .update = fs_update,
};
