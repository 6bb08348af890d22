/* render.c: timed MIDI messages through FluidSynth: offline into a WAV file, or in real time to the audio device. */
#include "synth/render.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/progress.h"

enum {
    BLOCK = 4096,           /* frames rendered per call */
    TAIL_QUIET = 3,         /* |sample| under this (-80 dBFS) ends the tail */
};
#define TAIL_MAX_S  3.0     /* longest release tail of a WAV */
#define PLAY_TAIL_S 1.5     /* ring-out after the last message when playing */

static midi_msg msg_of(const smf_event *e)
{
    midi_msg m = { e->status, e->data1, e->data2, (e->status & 0xE0) == 0xC0 ? 2 : 3 };
    return m;
}

static void put_le(uint8_t *p, uint32_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The 44-byte header of a 16-bit stereo PCM WAV file of FRAMES frames. */
static void wav_header(uint8_t h[44], int rate, uint32_t frames)
{
    uint32_t data = frames * 4;
    memcpy(h, "RIFF", 4);
    put_le(h + 4, 36 + data, 4);
    memcpy(h + 8, "WAVEfmt ", 8);
    put_le(h + 16, 16, 4);          /* fmt chunk size */
    put_le(h + 20, 1, 2);           /* PCM */
    put_le(h + 22, 2, 2);           /* channels */
    put_le(h + 24, (uint32_t)rate, 4);
    put_le(h + 28, (uint32_t)rate * 4, 4);
    put_le(h + 32, 4, 2);           /* bytes per frame */
    put_le(h + 34, 16, 2);          /* bits per sample */
    memcpy(h + 36, "data", 4);
    put_le(h + 40, data, 4);
}

/* Renders FRAMES frames into AF; returns the block's largest |sample|, or -1. */
static int render_frames(synth_fluid *s, atomic_file *af, int16_t *buf, int64_t frames,
                         const char *path)
{
    int peak = 0;
    while (frames > 0) {
        int k = frames < BLOCK ? (int)frames : BLOCK;
        if (synth_fluid_write(s, buf, k) < 0)
            return -1;
        for (int i = 0; i < 2 * k; i++) {
            int a = buf[i] < 0 ? -buf[i] : buf[i];
            if (a > peak)
                peak = a;
        }
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (int i = 0; i < 2 * k; i++)
            buf[i] = (int16_t)__builtin_bswap16((uint16_t)buf[i]);
#endif
        if (fwrite(buf, 4, (size_t)k, af->fp) != (size_t)k) {
            log_error("cannot write %s: %s", path, strerror(errno));
            return -1;
        }
        frames -= k;
    }
    return peak;
}

/* A WAV file being rendered: the synthesizer, the file, how far it got. */
typedef struct wav_render {
    synth_fluid *s;
    atomic_file af;
    int16_t *buf;           /* (2 * BLOCK) frames of scratch */
    const char *path;
    int rate;
    int64_t at;             /* frames written */
    int peak;               /* largest |sample| so far */
} wav_render;

/* The header for the W->at frames written so far, at the start of the file. */
static int write_wav_header(wav_render *w)
{
    uint8_t header[44];
    wav_header(header, w->rate, (uint32_t)w->at);
    if (fseek(w->af.fp, 0, SEEK_SET) != 0 || fwrite(header, 1, sizeof header, w->af.fp) != sizeof header) {
        log_error("cannot write %s: %s", w->path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Renders frames W->at .. DUE-1: the block's largest |sample|, or -1. */
static int render_to(wav_render *w, int64_t due)
{
    int p = render_frames(w->s, &w->af, w->buf, due - w->at, w->path);
    if (p < 0)
        return -1;
    w->peak = p > w->peak ? p : w->peak;
    w->at = due;
    return p;
}

/* Each message at its sample, the sound up to it rendered first. */
static int render_messages(wav_render *w, const smf_event *ev, size_t n, progress *bar)
{
    for (size_t i = 0; i < n; i++) {
        int64_t due = (int64_t)llround(ev[i].time * w->rate);
        if (due > w->at) {
            if (render_to(w, due) < 0)
                return -1;
            progress_update(bar, (size_t)(ev[i].time * 10), NULL);
        }
        midi_msg m = msg_of(&ev[i]);
        synth_fluid_send(w->s, &m);
    }
    return 0;
}

/* The release tail: until the sound has decayed, then silence. */
static int render_tail(wav_render *w)
{
    int64_t tail_end = w->at + (int64_t)(TAIL_MAX_S * w->rate), step = w->rate / 20;
    for (;;) {
        int p = render_to(w, w->at + step);
        if (p < 0)
            return -1;
        if (p < TAIL_QUIET || w->at >= tail_end)
            break;
    }
    synth_fluid_silence(w->s);
    return 0;
}

int synth_render_wav(const synth_fluid_opts *o, const smf_event *ev, size_t n, const char *path,
                     synth_render_stats *stats)
{
    synth_fluid_opts off = *o;
    wav_render w = { .path = path };
    progress bar;
    int have_file = 0, rc = -1;
    double t0 = clock_now_seconds();

    off.driver = NULL;
    off.lazy_samples = 1;       /* only the presets the music uses */
    if (strcmp(path, "-") == 0) {
        log_error("cannot write a WAV file to standard output: give a file name");
        return -1;
    }
    w.s = synth_fluid_open(&off);
    if (!w.s)
        return -1;
    double t_loaded = clock_now_seconds();
    w.rate = synth_fluid_rate(w.s);
    double music_s = n ? ev[n - 1].time : 0;
    w.buf = malloc(sizeof(int16_t) * 2 * BLOCK);
    if (!w.buf) {
        log_error("cannot render %s: out of memory", path);
        goto done;
    }
    if (atomic_file_open(&w.af, path) < 0)
        goto done;
    have_file = 1;
    if (write_wav_header(&w) < 0)
        goto done;
    progress_begin(&bar, "rendering", (size_t)(music_s * 10) + 1);
    if (render_messages(&w, ev, n, &bar) < 0 || render_tail(&w) < 0)
        goto done;
    progress_end(&bar);
    if (w.at > (int64_t)(UINT32_MAX / 4 - 64)) {
        log_error("cannot write %s: longer than a WAV file can hold", path);
        goto done;
    }
    if (write_wav_header(&w) < 0)
        goto done;
    have_file = 0;
    if (atomic_file_commit(&w.af) < 0)
        goto done;
    if (stats) {
        stats->music_s = music_s;
        stats->audio_s = (double)w.at / w.rate;
        stats->load_s = t_loaded - t0;
        stats->wall_s = clock_now_seconds() - t_loaded;
        stats->peak_dbfs = w.peak ? 20 * log10(w.peak / 32768.0) : -INFINITY;
    }
    rc = 0;
done:
    if (have_file)
        atomic_file_abort(&w.af);
    free(w.buf);
    synth_fluid_close(w.s);
    return rc;
}

/* Sleeps until DEADLINE (CLOCK_MONOTONIC seconds) in slices of at most
 * 0.1 s; returns -1 as soon as *STOP is set. */
static int wait_until(double deadline, volatile sig_atomic_t *stop)
{
    for (;;) {
        if (stop && *stop)
            return -1;
        double now = clock_now_seconds();
        if (now >= deadline)
            return 0;
        double d = deadline - now < 0.1 ? deadline - now : 0.1;
        struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };
        nanosleep(&ts, NULL);
    }
}

int synth_play(synth_fluid *s, const smf_event *ev, size_t n, volatile sig_atomic_t *stop)
{
    progress bar;
    double music_s = n ? ev[n - 1].time : 0;
    progress_begin(&bar, "playing", (size_t)(music_s * 10) + 1);
    double start = clock_now_seconds();
    size_t i;
    for (i = 0; i < n; i++) {
        if (wait_until(start + ev[i].time, stop) < 0)
            break;
        midi_msg m = msg_of(&ev[i]);
        synth_fluid_send(s, &m);
        progress_update(&bar, (size_t)(ev[i].time * 10), NULL);
    }
    if (i == n)
        wait_until(clock_now_seconds() + PLAY_TAIL_S, stop);
    synth_fluid_silence(s);
    wait_until(clock_now_seconds() + 0.1, NULL);     /* the driver plays the silence: no click, nothing cut off */
    progress_end(&bar);
    if (i < n)
        log_info("stopped at %.1f s of %.1f s", clock_now_seconds() - start, music_s);
    return i < n;
}
