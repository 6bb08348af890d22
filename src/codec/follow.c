/* follow.c: the pace and the pitch classes of the music so far, and the nudges that keep a continuation near them (follow.h). */
#include "codec/follow.h"

#include <math.h>
#include <string.h>

#include "codec/vocab.h"

#define FOLLOW_MAX_TILT 3.0f

void perf_follow_init(perf_follow *f, float pace, float key_pull)
{
    memset(f, 0, sizeof *f);
    f->pace = pace;
    f->key_pull = key_pull;
}

/* Index of the K-th newest note-on (0: the newest). */
static unsigned newest(const perf_follow *f, unsigned k)
{
    return (f->head + FOLLOW_RING - 1 - k) % FOLLOW_RING;
}

/* A note-off of PITCH at TIME ends the newest note-on of PITCH still
 * sounding (one the ring has forgotten: nothing). */
static void note_off(perf_follow *f, int pitch, double time)
{
    for (unsigned k = 0; k < f->n; k++) {
        unsigned i = newest(f, k);
        if (f->pitch[i] == pitch && f->release[i] < 0) {
            f->release[i] = time;
            return;
        }
    }
}

void perf_follow_push(perf_follow *f, const vocab *v, int id, double time)
{
    int value;
    int kind = vocab_decode(v, id, &value);
    if (kind == EVENT_NOTE_OFF)
        note_off(f, value, time);
    if (kind != EVENT_NOTE_ON)
        return;
    f->onset[f->head] = time;
    f->release[f->head] = -1;
    f->pitch[f->head] = (unsigned char)value;
    f->head = (f->head + 1) % FOLLOW_RING;
    if (f->n < FOLLOW_RING)
        f->n++;
}

double perf_follow_rate(const perf_follow *f, double now)
{
    unsigned count = 0;
    double first = now;
    for (unsigned k = 0; k < f->n && f->onset[newest(f, k)] > now - FOLLOW_WINDOW_S; k++) {
        first = f->onset[newest(f, k)];
        count++;
    }
    double span = now - first;
    return count / (span > 1.0 ? span : 1.0);
}

double perf_follow_poly(const perf_follow *f, double now)
{
    double first = now, sounding = 0;
    for (unsigned k = 0; k < f->n && f->onset[newest(f, k)] > now - FOLLOW_WINDOW_S; k++) {
        unsigned i = newest(f, k);
        first = f->onset[i];
        sounding += (f->release[i] < 0 || f->release[i] > now ? now : f->release[i]) - first;
    }
    double span = now - first;
    return sounding / (span > 1.0 ? span : 1.0);
}

double perf_follow_last_onset(const perf_follow *f)
{
    return f->n ? f->onset[newest(f, 0)] : -1;
}

void perf_follow_aim(perf_follow *f, double now)
{
    f->aim = perf_follow_rate(f, now);
    f->aim_poly = perf_follow_poly(f, now);
    double n_c[12] = { 0 }, n = 0;
    for (unsigned k = 0; k < f->n && f->onset[newest(f, k)] > now - FOLLOW_WINDOW_S; k++) {
        n_c[f->pitch[newest(f, k)] % 12] += 1;
        n += 1;
    }
    for (int c = 0; c < 12; c++)
        f->key_bias[c] = f->key_pull * (float)log(12.0 * (n_c[c] + 1) / (n + 12));
}

float perf_follow_tilt(const perf_follow *f, double now)
{
    if (f->pace <= 0)
        return 0;
    float t = f->pace * (float)log((perf_follow_rate(f, now) + 1.0) / (f->aim + 1.0));
    return t > FOLLOW_MAX_TILT ? FOLLOW_MAX_TILT : t < -FOLLOW_MAX_TILT ? -FOLLOW_MAX_TILT : t;
}

void perf_follow_apply(const perf_follow *f, const vocab *v, double now, float *logits)
{
    if (f->key_pull > 0)
        for (int p = v->min_pitch; p <= v->max_pitch; p++)
            logits[v->note_on_base + p - v->min_pitch] += f->key_bias[p % 12];
    float t = perf_follow_tilt(f, now);
    if (t == 0)
        return;
    for (int k = 1; k <= v->n_time_shifts; k++)
        logits[v->time_shift_base + k - 1] += t * 0.5f * logf((float)k);
}
