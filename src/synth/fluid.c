/* fluid.c: the FluidSynth output (soundfont, audio driver or offline rendering, messages in). */
#include "synth/fluid.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
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

/* While a thread opens a synth, FluidSynth's errors are kept for the one
 * error it reports instead of printed (they name the cause: "Failed to
 * open the "hw:1" audio device"). */
static _Thread_local char *capture;
static _Thread_local size_t capture_len;

static void route_fluid_log(int level, const char *message, void *data)
{
    (void)data;
    if (level <= FLUID_ERR && capture) {
        size_t k = strlen(capture);
        if (k + 3 < capture_len)
            snprintf(capture + k, capture_len - k, "%s%s", k ? "; " : "", message);
    } else if (level <= FLUID_ERR) {
        log_warn("fluidsynth: %s", message);
    } else {
        log_debug("fluidsynth: %s", message);
    }
}

static void route_logs(void)
{
    for (int l = FLUID_PANIC; l <= FLUID_DBG; l++)
        fluid_set_log_function(l, route_fluid_log, NULL);
}

typedef struct text_buf {
    char  *buf;
    size_t len;
} text_buf;

static void add_driver(void *data, const char *name, const char *option)
{
    text_buf *t = data;
    size_t k = strlen(t->buf);
    (void)name;
    if (k + 1 < t->len)
        snprintf(t->buf + k, t->len - k, "%s%s", k ? ", " : "", option);
}

const char *synth_fluid_drivers(char *buf, size_t len)
{
    text_buf t = { buf, len };
    if (len)
        buf[0] = '\0';
    route_logs();
    fluid_settings_t *st = new_fluid_settings();
    if (st) {
        fluid_settings_foreach_option(st, "audio.driver", &t, add_driver);
        delete_fluid_settings(st);
    }
    return buf;
}

int synth_fluid_has_driver(const char *name)
{
    char list[512];
    synth_fluid_drivers(list, sizeof list);
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

/* FluidSynth's sdl2 driver wants the program to have started SDL's audio
 * (SDL_Init(SDL_INIT_AUDIO)); continuo does not link SDL, so it asks the
 * library FluidSynth itself loaded.  Returns 0, or -1 with the cause. */
static int sdl_audio_init(char *why, size_t len)
{
    static int done;
    void *lib = dlopen("libSDL2-2.0.so.0", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        snprintf(why, len, "cannot load SDL2 (libSDL2-2.0.so.0): %s", dlerror());
        return -1;
    }
    int (*init_sub)(uint32_t);
    const char *(*get_error)(void);
    *(void **)&init_sub = dlsym(lib, "SDL_InitSubSystem");     /* POSIX's way past ISO C's rule */
    *(void **)&get_error = dlsym(lib, "SDL_GetError");
    if (!init_sub || !get_error) {
        snprintf(why, len, "SDL2 (libSDL2-2.0.so.0) lacks SDL_InitSubSystem");
        return -1;
    }
    if (!done && init_sub(0x00000010u) != 0) {     /* SDL_INIT_AUDIO */
        snprintf(why, len, "SDL2 cannot start its audio: %s", get_error());
        return -1;
    }
    done = 1;
    return 0;
}

/* Points the driver at DEVICE: audio.<driver>.device, or the JACK server. */
static int set_device(fluid_settings_t *st, const char *driver, const char *device)
{
    char key[96];
    if (strcmp(driver, "jack") == 0)
        snprintf(key, sizeof key, "audio.jack.server");
    else
        snprintf(key, sizeof key, "audio.%s.device", driver);
    if (fluid_settings_get_type(st, key) != FLUID_STR_TYPE) {
        log_error("cannot start audio driver %s (device %s): this driver takes no device; "
                  "leave audio_device empty", driver, device);
        return -1;
    }
    fluid_settings_setstr(st, key, device);
    return 0;
}

static void driver_error(const synth_fluid_opts *o, const char *cause)
{
    char list[512];
    const char *dev = o->device && *o->device ? o->device : "default";
    synth_fluid_drivers(list, sizeof list);
    log_error("cannot start audio driver %s (device %s): %s\n"
              "  try: another audio driver (this FluidSynth has %s; `continuo doctor` shows which open)%s%s",
              o->driver, strcmp(o->driver, "file") == 0 ? o->file : dev, cause, list,
              o->advice ? ", " : "", o->advice ? o->advice : "");
}

/* What can be checked before FluidSynth starts: the soundfont is a file,
 * the driver is built in, and SDL's audio is up for sdl2 (WHY, LEN: room
 * for its cause); -1 (logged) when one is not. */
static int check_opts(const synth_fluid_opts *o, char *why, size_t len)
{
    struct stat st;
    if (o->soundfont) {
        if (stat(o->soundfont, &st) < 0) {
            log_error("cannot open soundfont %s: %s", o->soundfont, strerror(errno));
            return -1;
        }
        if (!S_ISREG(st.st_mode)) {
            log_error("cannot open soundfont %s: not a regular file", o->soundfont);
            return -1;
        }
    }
    if (o->driver && !synth_fluid_has_driver(o->driver)) {
        driver_error(o, "this FluidSynth has no such driver");
        return -1;
    }
    if (o->driver && strcmp(o->driver, "sdl2") == 0 && sdl_audio_init(why, len) < 0) {
        driver_error(o, why);
        return -1;
    }
    return 0;
}

/* The settings of the audio driver O names: its output file or device, and
 * JACK's autoconnect; -1 (logged) for a device it cannot take. */
static int set_driver(fluid_settings_t *st, const synth_fluid_opts *o)
{
    fluid_settings_setstr(st, "audio.driver", o->driver);
    if (strcmp(o->driver, "file") == 0) {
        fluid_settings_setstr(st, "audio.file.name", o->file);
        fluid_settings_setstr(st, "audio.file.type", "wav");
    } else if (o->device && *o->device && set_device(st, o->driver, o->device) < 0) {
        return -1;
    }
    if (strcmp(o->driver, "jack") == 0)
        fluid_settings_setint(st, "audio.jack.autoconnect", 1);
    return 0;
}

synth_fluid *synth_fluid_open(const synth_fluid_opts *o)
{
    char why[512] = "";
    synth_fluid *s = NULL;

    if (check_opts(o, why, sizeof why) < 0)
        return NULL;
    route_logs();
    capture = why;
    capture_len = sizeof why;
    s = calloc(1, sizeof *s);
    if (!s || !(s->settings = new_fluid_settings())) {
        log_error("cannot start FluidSynth: out of memory");
        goto fail;
    }
    if (o->driver && set_driver(s->settings, o) < 0)
        goto fail;
    fluid_settings_setnum(s->settings, "synth.gain", o->gain);
    if (o->lazy_samples)
        fluid_settings_setint(s->settings, "synth.dynamic-sample-loading", 1);
    s->synth = new_fluid_synth(s->settings);
    if (!s->synth) {
        log_error("cannot start FluidSynth: new_fluid_synth failed%s%s", *why ? ": " : "", why);
        goto fail;
    }
    if (o->soundfont && fluid_synth_sfload(s->synth, o->soundfont, 1) == FLUID_FAILED) {
        log_error("cannot open soundfont %s: not a SoundFont FluidSynth can load%s%s", o->soundfont,
                  *why ? ": " : "", why);
        goto fail;
    }
    why[0] = '\0';
    if (o->driver && !(s->driver = new_fluid_audio_driver(s->settings, s->synth))) {
        driver_error(o, *why ? why : "FluidSynth could not open it");
        goto fail;
    }
    capture = NULL;
    return s;
fail:
    capture = NULL;
    synth_fluid_close(s);
    return NULL;
}

int synth_fluid_probe(const char *driver, const char *device, char *why, size_t len)
{
    fluid_settings_t *st = NULL;
    fluid_synth_t *syn = NULL;
    fluid_audio_driver_t *drv = NULL;
    char device_key[96];

    why[0] = '\0';
    route_logs();
    capture = why;
    capture_len = len;
    if (!synth_fluid_has_driver(driver)) {
        snprintf(why, len, "this FluidSynth has no such driver");
        goto done;
    }
    if (strcmp(driver, "sdl2") == 0 && sdl_audio_init(why, len) < 0)
        goto done;
    if (!(st = new_fluid_settings()))
        goto done;
    fluid_settings_setstr(st, "audio.driver", driver);
    if (device && *device) {
        snprintf(device_key, sizeof device_key, strcmp(driver, "jack") == 0 ? "audio.jack.server"
                 : "audio.%s.device", driver);
        if (fluid_settings_get_type(st, device_key) != FLUID_STR_TYPE) {
            snprintf(why, len, "this driver takes no device");
            goto done;
        }
        fluid_settings_setstr(st, device_key, device);
    }
    if ((syn = new_fluid_synth(st)))
        drv = new_fluid_audio_driver(st, syn);
done:
    capture = NULL;
    if (!drv && !why[0])
        snprintf(why, len, "FluidSynth could not open it");
    if (drv)
        delete_fluid_audio_driver(drv);
    if (syn)
        delete_fluid_synth(syn);
    if (st)
        delete_fluid_settings(st);
    return drv ? 0 : -1;
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

void synth_fluid_set_gain(synth_fluid *s, double gain)
{
    fluid_synth_set_gain(s->synth, (float)gain);
}

void synth_fluid_silence(synth_fluid *s)
{
    fluid_synth_all_notes_off(s->synth, -1);
    fluid_synth_all_sounds_off(s->synth, -1);
}

int synth_fluid_write(synth_fluid *s, int16_t *out, int frames)
{
    if (fluid_synth_write_s16(s->synth, frames, out, 0, 2, out, 1, 2) != FLUID_OK) {
        log_error("FluidSynth could not render %d frames", frames);
        return -1;
    }
    return 0;
}

int synth_fluid_rate(const synth_fluid *s)
{
    double rate = 44100;
    fluid_settings_getnum(s->settings, "synth.sample-rate", &rate);
    return (int)rate;
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

synth_fluid *synth_fluid_open(const synth_fluid_opts *o)
{
    log_error("cannot open soundfont %s: continuo was built without FluidSynth",
              o->soundfont ? o->soundfont : "(none)");
    return NULL;
}

void synth_fluid_send(synth_fluid *s, const midi_msg *m)
{
    (void)s;
    (void)m;
}

void synth_fluid_set_gain(synth_fluid *s, double gain)
{
    (void)s;
    (void)gain;
}

void synth_fluid_silence(synth_fluid *s)
{
    (void)s;
}

int synth_fluid_write(synth_fluid *s, int16_t *out, int frames)
{
    (void)s;
    (void)out;
    (void)frames;
    return -1;
}

int synth_fluid_rate(const synth_fluid *s)
{
    (void)s;
    return 44100;
}

void synth_fluid_close(synth_fluid *s)
{
    (void)s;
}

const char *synth_fluid_drivers(char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
    return buf;
}

int synth_fluid_has_driver(const char *name)
{
    (void)name;
    return 0;
}

int synth_fluid_probe(const char *driver, const char *device, char *why, size_t len)
{
    (void)driver;
    (void)device;
    snprintf(why, len, "continuo was built without FluidSynth");
    return -1;
}

#endif
