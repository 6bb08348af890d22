/* knobs.c: the musical knobs (play_options.h) as arithmetic on the model's logits, given what was heard and what sounds. */
#include "play/knobs.h"

#include <math.h>
#include <string.h>

#include "play/key_fit.h"
#include "play/odds.h"

#define DENSITY_GAIN   1.2      /* density d: each note-on's odds times d^1.2 (with the pace's aim times d) */
#define VELOCITY_SIGMA 1.5      /* velocity bins: the width of the pull toward the target's bin */
#define MOTIF_GAIN     4.0f     /* motif 1: a note that goes on a run heard, its logit + 4 ln(1 + count) */
#define EXPLICIT_KEY_WEIGHT 30  /* a named key counts as 30 note-ons of each class of its scale */

int chord_order_insert(unsigned char *pitch, double *at, int n, int p, double t)
{
    int j = n;
    for (; j > 0 && at[j - 1] == t && pitch[j - 1] > p; j--) {
        pitch[j] = pitch[j - 1];
        at[j] = at[j - 1];
    }
    pitch[j] = (unsigned char)p;
    at[j] = t;
    return n + 1;
}

/* The note-ons of F in the FOLLOW_WINDOW_S seconds before NOW, oldest
 * first and, struck together, low to high: their pitches into H's phrase,
 * their classes' counts into N_C. */
static void read_heard(knobs_heard *h, const perf_follow *f, double now, double n_c[12])
{
    double onset[FOLLOW_RING];
    int n = 0;
    memset(n_c, 0, 12 * sizeof *n_c);
    for (unsigned k = f->n; k-- > 0;) {
        unsigned i = (f->head + FOLLOW_RING - 1 - k) % FOLLOW_RING;
        if (f->onset[i] <= now - FOLLOW_WINDOW_S)
            continue;
        n = chord_order_insert(h->phrase, onset, n, f->pitch[i], f->onset[i]);
        n_c[f->pitch[i] % 12] += 1;
    }
    h->n_phrase = n;
}

int knobs_nearest_scale(const double n_c[12], unsigned char scale[12])
{
    int tonic, minor;
    if (key_fit(n_c, &tonic, &minor) == KEY_FIT_NONE)
        return 0;
    play_key k = { (unsigned char)(minor ? PLAY_MODE_AEOLIAN : PLAY_MODE_IONIAN), (unsigned char)tonic, 0 };
    return play_key_scale(&k, scale) == 0;
}

/* Density scales the pace's aim and the texture's (half the notes, as
 * long, sound half as many at once); a named key replaces the classes heard
 * in the key pull (as if its scale had been heard EXPLICIT_KEY_WEIGHT
 * times a class), off drops the pull; key_lock's scale is the named key's
 * or (auto) the nearest to what was heard. */
void knobs_begin(knobs_heard *h, perf_follow *f, const play_settings *p, double now)
{
    double n_c[12];
    read_heard(h, f, now, n_c);
    f->aim *= p->density;
    f->aim_poly *= p->density;
    f->pace *= (float)(1 + fabs(log2(p->density)));   /* 2 and 0.5 keep the new aim twice as firmly */
    if (p->key.kind == PLAY_KEY_OFF)
        f->key_pull = 0;
    unsigned char named[12];
    if (play_key_scale(&p->key, named) == 0) {
        double w[12], total = 0;
        for (int i = 0; i < 12; i++)
            total += w[i] = named[i] ? EXPLICIT_KEY_WEIGHT : 0;
        for (int i = 0; i < 12; i++)
            f->key_bias[i] = f->key_pull * (float)log(12.0 * (w[i] + 1) / (total + 12));
        memcpy(h->scale, named, sizeof named);
        h->have_scale = p->key_lock;
    } else {
        h->have_scale = p->key_lock && p->key.kind == PLAY_KEY_AUTO && knobs_nearest_scale(n_c, h->scale);
    }
}

/* A change of one id's logit: L, the logit of id BASE + I, changed by ARG. */
typedef float (*reweigh_fn)(const void *arg, int i, float l);

/* Changes the logits of ids BASE..BASE+N-1 by D, then moves them all by
 * one amount so that the class keeps its total probability among the ids
 * MASK allows: a knob changes which note, or which wait, never how many. */
static void reweigh(const uint8_t *mask, float *logits, int base, int n, reweigh_fn d, const void *arg)
{
    float *l = logits + base;
    const uint8_t *m = mask + base;
    double top = odds_top(l, m, n), before = odds_exp_sum(l, m, n, top, NULL);
    for (int i = 0; i < n; i++)
        l[i] = d(arg, i, l[i]);
    double after = odds_exp_sum(l, m, n, top, NULL);
    if (before <= 0 || after <= 0)
        return;
    float shift = (float)(log(before) - log(after));
    for (int i = 0; i < n; i++)
        l[i] += shift;
}

static float by_temperature(const void *temperature, int i, float l)
{
    (void)i;
    return l / (float)*(const double *)temperature;
}

/* Weights W (this step's odds, unnormalized, 0 for what MASK forbids) of
 * the ids BASE..BASE+N-1; returns their total, and the mean of X under
 * them in *MEAN. */
static double class_weights(const uint8_t *mask, const float *logits, int base, int n, const double *x, double *w,
                            double *mean)
{
    const float *l = logits + base;
    double total = odds_exp_sum(l, mask + base, n, odds_top(l, mask + base, n), w), m = 0;
    for (int i = 0; i < n; i++)
        m += w[i] * x[i];
    *mean = total > 0 ? m / total : 0;
    return total;
}

/* The tilt lambda * X (|lambda| <= LIM) that moves the mean of X under
 * weights W to WANT, or as far as LIM reaches: by bisection, since the
 * mean grows with lambda. */
static double tilt_to(const double *w, const double *x, int n, double want, double lim)
{
    double lo = -lim, hi = lim, xmin = x[0], xmax = x[0];
    for (int i = 1; i < n; i++) {
        xmin = x[i] < xmin ? x[i] : xmin;
        xmax = x[i] > xmax ? x[i] : xmax;
    }
    for (int it = 0; it < 30; it++) {
        double mid = (lo + hi) / 2, off = mid > 0 ? xmax : xmin, sum = 0, mean = 0;
        for (int i = 0; i < n; i++) {
            double e = w[i] * exp(mid * (x[i] - off));    /* shifted: no overflow */
            sum += e;
            mean += e * x[i];
        }
        if (sum > 0 && mean / sum < want)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

typedef struct tilt {
    const double *x;
    double lambda;
} tilt;

static float by_tilt(const void *arg, int i, float l)
{
    const tilt *t = arg;
    return l + (float)(t->lambda * t->x[i]);
}

/* register: the tilt on the note-ons that moves the mean pitch of this
 * step's odds up by REGISTER_STEP * register_shift semitones (|lambda| <=
 * 1): the same shift up and down, whatever the model's odds lean to.  The
 * model follows its own notes, so the shifts add up: on ASAP's valid split
 * a full shift at each step moved the mean pitch 2.7 to 2.9 times as far
 * as asked, 0.2 of it as far (docs/REALISM.md). */
#define REGISTER_STEP 0.2
static void steer_register(const knobs_view *k, double shift, float *logits)
{
    const vocab *v = k->v;
    int n = v->max_pitch - v->min_pitch + 1;
    double x[128], w[128], mean;
    for (int i = 0; i < n; i++)
        x[i] = i;
    if (class_weights(k->mask, logits, v->note_on_base, n, x, w, &mean) <= 0)
        return;
    tilt t = { x, tilt_to(w, x, n, mean + REGISTER_STEP * shift, 1) };
    reweigh(k->mask, logits, v->note_on_base, n, by_tilt, &t);
}

/* rhythm_temperature: the time shifts' odds at their own temperature, then
 * tilted by lambda * steps back to the mean wait they had: the rhythm
 * grows more (less) regular, the pace stays (on ASAP's valid split, 0.7
 * alone played 37 % more notes a second, kept to the mean log-wait 16 %
 * more, kept to the mean wait 2 % fewer). */
static void steer_rhythm(const knobs_view *k, double temperature, float *logits)
{
    const vocab *v = k->v;
    int n = v->n_time_shifts;
    double x[256], w[256], before, after;
    if (n > 256)
        return;
    for (int i = 0; i < n; i++)
        x[i] = i + 1.0;
    if (class_weights(k->mask, logits, v->time_shift_base, n, x, w, &before) <= 0)
        return;
    reweigh(k->mask, logits, v->time_shift_base, n, by_temperature, &temperature);
    if (class_weights(k->mask, logits, v->time_shift_base, n, x, w, &after) <= 0)
        return;
    tilt t = { x, tilt_to(w, x, n, before, 4) };
    reweigh(k->mask, logits, v->time_shift_base, n, by_tilt, &t);
}

static float by_velocity(const void *target_bin, int b, float l)
{
    double d = b - *(const int *)target_bin;
    return l - (float)(d * d / (2 * VELOCITY_SIGMA * VELOCITY_SIGMA));
}

/* A run of two intervals counts 1, of one MOTIF_SHORT (many more match,
 * each says less). */
#define MOTIF_SHORT 0.3f
int knobs_motif_counts(const knobs_heard *h, const perf_follow *f, float counts[128])
{
    if (f->n < 3 || h->n_phrase < 3)
        return 0;
    int last[3];
    for (int k = 0; k < 3; k++)
        last[2 - k] = f->pitch[(f->head + FOLLOW_RING - 1 - (unsigned)k) % FOLLOW_RING];
    int found = 0;
    memset(counts, 0, 128 * sizeof *counts);
    for (int i = 0; i + 2 < h->n_phrase; i++) {
        const unsigned char *ph = h->phrase + i;
        if (ph[1] - ph[0] != last[2] - last[1])
            continue;
        int next = last[2] + (ph[2] - ph[1]);
        int two = i > 0 && ph[0] - ph[-1] == last[1] - last[0];
        if (next >= 0 && next < 128) {
            counts[next] += two ? 1.0f : MOTIF_SHORT;
            found = 1;
        }
    }
    return found;
}

typedef struct motif_pull {
    const float *counts;
    float motif;
    int min_pitch;
} motif_pull;

static float by_motif(const void *arg, int i, float l)
{
    const motif_pull *m = arg;
    return l + m->motif * MOTIF_GAIN * logf(1.0f + m->counts[m->min_pitch + i]);
}

/* release: a note of the continuation's held past RELEASE_FROM of the
 * length cap has its NOTE_OFF drawn nearer, up to release x RELEASE_GAIN
 * on its logit at the cap, so that it ends as a pianist would let go
 * rather than being cut there.  The model, left alone, holds a note to
 * the cap a dozen times as often as a pianist does (docs/REALISM.md). */
#define RELEASE_FROM 0.4
#define RELEASE_GAIN 6.0
static void steer_release(const play_settings *p, const knobs_view *k, float *logits)
{
    const perf_decoder *d = k->dec;
    const vocab *v = k->v;
    double cap = p->max_note_ms / 1000.0, from = cap * RELEASE_FROM;
    for (int n = v->min_pitch; n <= v->max_pitch; n++) {
        double age = d->onset[n] >= 0 && k->model_on[n] ? d->time - d->onset[n] : 0;
        if (age > from)
            logits[v->note_off_base + n - v->min_pitch] += (float)(p->release * RELEASE_GAIN * (age - from) / (cap - from));
    }
}

void knobs_steer(const play_settings *p, const knobs_view *k, float *logits)
{
    const vocab *v = k->v;
    int n_pitch = v->max_pitch - v->min_pitch + 1;
    float counts[128];
    if (p->density != 1)
        for (int i = 0; i < n_pitch; i++)
            logits[v->note_on_base + i] += (float)(DENSITY_GAIN * log(p->density));
    if (p->register_shift != 0)
        steer_register(k, p->register_shift, logits);
    if (p->release > 0)
        steer_release(p, k, logits);
    if (p->motif > 0 && knobs_motif_counts(k->heard, k->follow, counts)) {
        motif_pull m = { counts, (float)p->motif, v->min_pitch };
        reweigh(k->mask, logits, v->note_on_base, n_pitch, by_motif, &m);
    }
    if (p->pitch_temperature != 1)
        reweigh(k->mask, logits, v->note_on_base, n_pitch, by_temperature, &p->pitch_temperature);
    if (p->rhythm_temperature != 1)
        steer_rhythm(k, p->rhythm_temperature, logits);
    if (p->velocity > 0) {
        int target = velocity_to_bin(v, p->velocity);
        reweigh(k->mask, logits, v->velocity_base, v->n_velocity_bins, by_velocity, &target);
    }
}
