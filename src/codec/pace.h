/* pace.h: keeps a continuation near the pace of the music it continues, by
 * tilting the model's odds for how long to wait. */
#ifndef CONTINUO_PACE_H
#define CONTINUO_PACE_H

struct vocab;

#define PACE_RING     1024      /* note-ons remembered: above 100 a second over the window */
#define PACE_WINDOW_S 10.0      /* seconds the rate is measured over */

/* Left to its own odds the model drifts away from the pace it continues:
 * after slow openings it played two to three times the pianist's notes per
 * second (ASAP's valid split, docs/REALISM.md), in fast runs rather than
 * in more frequent ones, so making waits likelier does not help; making
 * them longer does.  perf_pace measures the note-on rate over the music of
 * the last PACE_WINDOW_S seconds; perf_pace_aim takes the rate at the end
 * of the primer (or of the player's phrase) as the aim; perf_pace_apply
 * then adds
 *
 *     tilt * ln(k) / 2,   tilt = strength * ln((rate + 1) / (aim + 1))
 *
 * (clamped to +-3) to the logit of a time shift of k steps.  A continuation
 * running faster than its aim gets longer waits, a slower one shorter
 * waits; at its aim the model's odds are untouched, and which note, how
 * loud and how long keep the model's odds always.  Fixed size, no
 * allocation: a struct copy saves and restores it. */
typedef struct perf_pace {
    float  strength;            /* 0: off */
    double aim;                 /* note-ons per second to keep */
    double onset[PACE_RING];    /* times (s) of the last note-ons, a ring */
    unsigned head, n;
} perf_pace;

void   perf_pace_init(perf_pace *p, float strength);
/* Event ID of layout V happened at TIME seconds (only note-ons count). */
void   perf_pace_push(perf_pace *p, const struct vocab *v, int id, double time);
/* Note-ons per second at NOW: the note-ons of the last PACE_WINDOW_S seconds
 * over the time from the first of them (at least 1 s), so a short phrase
 * after a silence counts at its own pace. */
double perf_pace_rate(const perf_pace *p, double now);
/* The rate at NOW becomes the aim. */
void   perf_pace_aim(perf_pace *p, double now);
/* The tilt at NOW (0 when off). */
float  perf_pace_tilt(const perf_pace *p, double now);
/* Adds the tilt's share to each time-shift logit of layout V. */
void   perf_pace_apply(const perf_pace *p, const struct vocab *v, double now, float *logits);

#endif
