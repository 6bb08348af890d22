/* listen.c: `--play` and `--wav FILE` of continue and demo: the music through FluidSynth. */
#include "cli/listen.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/options.h"
#include "synth/render.h"
#include "util/log.h"

/* The settings of the synth: the config file's, else the defaults. */
static int load_settings(config *c, char *path, size_t len)
{
    config_defaults(c);
    if (!config_find_file(path, len)) {
        snprintf(path, len, "(no config file)");
        return 0;
    }
    config tmp = *c;
    if (config_load_file(&tmp, path) < 0) {
        log_error("cannot use the settings of %s (see above): fix it, or move it aside", path);
        return -1;
    }
    *c = tmp;
    return 0;
}

typedef struct timed {
    smf_event ev;
    size_t    order;    /* keeps the order of equal times */
} timed;

static int by_time(const void *a, const void *b)
{
    const timed *x = a, *y = b;
    if (x->ev.time != y->ev.time)
        return x->ev.time < y->ev.time ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* The tracks merged into one list sorted by time (caller frees). */
static smf_event *merge(const smf_track_out *tracks, int n_tracks, size_t *n)
{
    size_t total = 0, k = 0;
    for (int t = 0; t < n_tracks; t++)
        total += tracks[t].n_events;
    timed *tmp = malloc(sizeof *tmp * (total ? total : 1));
    smf_event *out = malloc(sizeof *out * (total ? total : 1));
    if (!tmp || !out) {
        log_error("cannot render the music: out of memory");
        free(tmp);
        free(out);
        return NULL;
    }
    for (int t = 0; t < n_tracks; t++)
        for (size_t i = 0; i < tracks[t].n_events; i++, k++)
            tmp[k] = (timed){ tracks[t].events[i], k };
    qsort(tmp, total, sizeof *tmp, by_time);
    for (size_t i = 0; i < total; i++)
        out[i] = tmp[i].ev;
    free(tmp);
    *n = total;
    return out;
}

static volatile sig_atomic_t stop_playing;

static void on_stop(int sig)
{
    (void)sig;
    stop_playing = 1;
}

int listen_output(const listen_opts *o, const smf_track_out *tracks, int n_tracks)
{
    config c;
    char conf[CONFIG_STR_MAX], drv[32], advice[CONFIG_STR_MAX + 160];
    size_t n = 0;
    int rc = -1;

    if (!o->play && !o->wav)
        return 0;
    if (load_settings(&c, conf, sizeof conf) < 0)
        return -1;
    smf_event *ev = merge(tracks, n_tracks, &n);
    if (!ev)
        return -1;
    config_enum_name(config_find("audio_driver"), c.audio_driver, drv, sizeof drv);
    snprintf(advice, sizeof advice, "set audio_driver or audio_device in %s, or --wav FILE to render "
             "to a file instead", conf);
    synth_fluid_opts so = { .soundfont = c.soundfont, .driver = drv, .device = c.audio_device,
                            .file = c.audio_file, .gain = c.gain, .advice = advice,
                            .lazy_samples = 1 };
    if (o->wav) {
        synth_render_stats st;
        if (synth_render_wav(&so, ev, n, o->wav, &st) < 0)
            goto done;
        printf("%s: %.2f s of audio (the music's %.2f s and its release), rendered in %.2f s "
               "(%.0fx real time; the soundfont loaded in %.2f s before), peak %.1f dBFS\n", o->wav,
               st.audio_s, st.music_s, st.wall_s, st.wall_s > 0 ? st.audio_s / st.wall_s : 0, st.load_s,
               st.peak_dbfs);
    }
    if (o->play) {
        struct sigaction sa, old_int, old_term;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        stop_playing = 0;
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
        synth_fluid *s = synth_fluid_open(&so);
        if (s) {
            printf("playing through FluidSynth (audio_driver %s, soundfont %s); Ctrl-C stops\n", drv,
                   c.soundfont);
            fflush(stdout);
            synth_play(s, ev, n, &stop_playing);
            synth_fluid_close(s);
        }
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        if (!s)
            goto done;
    }
    rc = 0;
done:
    free(ev);
    return rc;
}
