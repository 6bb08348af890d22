/* pace.c: the note-on rate of the music so far and the tilt of the time shifts that follows it (pace.h). */
#include "codec/pace.h"

#include <math.h>
#include <string.h>

#include "codec/vocab.h"

#define PACE_MAX_TILT 3.0f

void perf_pace_init(perf_pace *p, float strength)
{
    memset(p, 0, sizeof *p);
    p->strength = strength;
}

void perf_pace_push(perf_pace *p, const vocab *v, int id, double time)
{
    int value;
    if (vocab_decode(v, id, &value) != EVENT_NOTE_ON)
        return;
    p->onset[p->head] = time;
    p->head = (p->head + 1) % PACE_RING;
    if (p->n < PACE_RING)
        p->n++;
}

double perf_pace_rate(const perf_pace *p, double now)
{
    unsigned count = 0;
    double first = now;
    for (unsigned k = 0; k < p->n; k++) {
        double t = p->onset[(p->head + PACE_RING - 1 - k) % PACE_RING];
        if (t <= now - PACE_WINDOW_S)
            break;
        first = t;
        count++;
    }
    double span = now - first;
    return count / (span > 1.0 ? span : 1.0);
}

void perf_pace_aim(perf_pace *p, double now)
{
    p->aim = perf_pace_rate(p, now);
}

float perf_pace_tilt(const perf_pace *p, double now)
{
    if (p->strength <= 0)
        return 0;
    float t = p->strength * (float)log((perf_pace_rate(p, now) + 1.0) / (p->aim + 1.0));
    return t > PACE_MAX_TILT ? PACE_MAX_TILT : t < -PACE_MAX_TILT ? -PACE_MAX_TILT : t;
}

void perf_pace_apply(const perf_pace *p, const vocab *v, double now, float *logits)
{
    float t = perf_pace_tilt(p, now);
    if (t == 0)
        return;
    for (int k = 1; k <= v->n_time_shifts; k++)
        logits[v->time_shift_base + k - 1] += t * 0.5f * logf((float)k);
}
