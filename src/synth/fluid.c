/* fluid.c: the FluidSynth output (soundfont, audio driver, messages in). */
#include "synth/fluid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "util/log.h"

#if HAVE_FLUIDSYNTH
#include <fluidsynth.h>

struct synth_fluid {
    fluid_settings_t     *settings;
    fluid_synth_t        *synth;
    fluid_audio_driver_t *driver;
};

static void route_fluid_log(int level, const char *message, void *data)
{
    (void)data;
    if (level <= FLUID_ERR)
        log_warn("fluidsynth: %s", message);
    else
        log_debug("fluidsynth: %s", message);
}

synth_fluid *synth_fluid_open(const char *soundfont, const char *driver, const char *file)
{
    struct stat st;
    synth_fluid *s = NULL;

    if (stat(soundfont, &st) < 0) {
        log_error("cannot open soundfont %s: %s", soundfont, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        log_error("cannot open soundfont %s: not a regular file", soundfont);
        return NULL;
    }
    for (int l = FLUID_PANIC; l <= FLUID_DBG; l++)
        fluid_set_log_function(l, route_fluid_log, NULL);
    s = calloc(1, sizeof *s);
    if (!s || !(s->settings = new_fluid_settings())) {
        log_error("cannot start FluidSynth: out of memory");
        goto fail;
    }
    fluid_settings_setstr(s->settings, "audio.driver", driver);
    if (strcmp(driver, "file") == 0) {
        fluid_settings_setstr(s->settings, "audio.file.name", file);
        fluid_settings_setstr(s->settings, "audio.file.type", "wav");
    }
    fluid_settings_setnum(s->settings, "synth.gain", 0.6);
    s->synth = new_fluid_synth(s->settings);
    if (!s->synth) {
        log_error("cannot start FluidSynth: new_fluid_synth failed");
        goto fail;
    }
    if (fluid_synth_sfload(s->synth, soundfont, 1) == FLUID_FAILED) {
        log_error("cannot open soundfont %s: not a SoundFont FluidSynth can load", soundfont);
        goto fail;
    }
    s->driver = new_fluid_audio_driver(s->settings, s->synth);
    if (!s->driver) {
        log_error("cannot start audio driver %s%s%s: FluidSynth could not open it", driver,
                  strcmp(driver, "file") == 0 ? " writing " : "",
                  strcmp(driver, "file") == 0 ? file : "");
        goto fail;
    }
    return s;
fail:
    synth_fluid_close(s);
    return NULL;
}

void synth_fluid_send(synth_fluid *s, const midi_msg *m)
{
    int ch = m->status & 0x0F;
    switch (m->status & 0xF0) {
    case 0x80: fluid_synth_noteoff(s->synth, ch, m->data1); break;
    case 0x90:
        if (m->data2)
            fluid_synth_noteon(s->synth, ch, m->data1, m->data2);
        else
            fluid_synth_noteoff(s->synth, ch, m->data1);
        break;
    case 0xA0: fluid_synth_key_pressure(s->synth, ch, m->data1, m->data2); break;
    case 0xB0: fluid_synth_cc(s->synth, ch, m->data1, m->data2); break;
    case 0xC0: fluid_synth_program_change(s->synth, ch, m->data1); break;
    case 0xD0: fluid_synth_channel_pressure(s->synth, ch, m->data1); break;
    case 0xE0: fluid_synth_pitch_bend(s->synth, ch, m->data1 | (m->data2 << 7)); break;
    default: break;
    }
}

void synth_fluid_close(synth_fluid *s)
{
    if (!s)
        return;
    if (s->driver)
        delete_fluid_audio_driver(s->driver);
    if (s->synth)
        delete_fluid_synth(s->synth);
    if (s->settings)
        delete_fluid_settings(s->settings);
    free(s);
}

#else

struct synth_fluid {
    int unused;
};

synth_fluid *synth_fluid_open(const char *soundfont, const char *driver, const char *file)
{
    (void)driver;
    (void)file;
    log_error("cannot open soundfont %s: continuo was built without FluidSynth", soundfont);
    return NULL;
}

void synth_fluid_send(synth_fluid *s, const midi_msg *m)
{
    (void)s;
    (void)m;
}

void synth_fluid_close(synth_fluid *s)
{
    (void)s;
}

#endif
