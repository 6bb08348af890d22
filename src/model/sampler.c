/* sampler.c: temperature, top-k, top-p and min-p sampling over masked logits, with a seeded RNG. */
#include "model/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/perf.h"
#include "codec/vocab.h"
#include "util/log.h"

void sampler_opts_default(sampler_opts *o)
{
    o->temperature = (float)PLAY_TEMPERATURE;
    o->top_k = PLAY_TOP_K;
    o->top_p = (float)PLAY_TOP_P;
    o->min_p = (float)PLAY_MIN_P;
    o->filter_time = PLAY_FILTER_TIME;
    o->seed = 1;
}

int sampler_configure(sampler *s, const sampler_opts *o)
{
    if (!(o->temperature >= 0 && o->temperature <= 100) || o->top_k < 0
        || !(o->top_p > 0 && o->top_p <= 1) || !(o->min_p >= 0 && o->min_p <= 1)) {
        log_error("sampler: bad options (temperature %g in 0..100, top-k %d >= 0, top-p %g in (0, 1], "
                  "min-p %g in [0, 1])", (double)o->temperature, o->top_k, (double)o->top_p, (double)o->min_p);
        return -1;
    }
    s->opts = *o;
    /* splitmix64 of the seed: any seed (0 too) gives a non-zero xorshift state */
    uint64_t z = o->seed + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    s->rng = (z ^ (z >> 31)) | 1;
    return 0;
}

int sampler_init(sampler *s, int vocab_size, const sampler_opts *o)
{
    memset(s, 0, sizeof *s);
    if (sampler_configure(s, o) < 0)
        return -1;
    s->vocab_size = vocab_size;
    s->probs = malloc(sizeof(float) * (size_t)vocab_size);
    s->order = malloc(sizeof *s->order * (size_t)vocab_size);
    s->forbidden = calloc((size_t)vocab_size, 1);
    if (!s->probs || !s->order || !s->forbidden) {
        log_error("sampler: out of memory");
        sampler_free(s);
        return -1;
    }
    return 0;
}

void sampler_free(sampler *s)
{
    free(s->probs);
    free(s->order);
    free(s->forbidden);
    memset(s, 0, sizeof *s);
}

void sampler_allow_all(sampler *s)
{
    memset(s->forbidden, 0, (size_t)s->vocab_size);
}

void sampler_forbid(sampler *s, int id)
{
    if (id >= 0 && id < s->vocab_size)
        s->forbidden[id] = 1;
}

void sampler_protect(sampler *s, int id)
{
    if (id >= 0 && id < s->vocab_size && s->forbidden[id] != 1)
        s->forbidden[id] = 2;
}

void sampler_mask_from_decoder(sampler *s, const vocab *v, const perf_decoder *d, int max_held, int allow_eos)
{
    sampler_allow_all(s);
    if (v->has_pad_eos) {
        sampler_forbid(s, 0);
        if (!allow_eos)
            sampler_forbid(s, 1);
    }
    int held = 0;
    for (int p = 0; p < 128; p++)
        held += d->onset[p] >= 0;
    for (int p = v->min_pitch; p <= v->max_pitch; p++) {
        int sounding = d->onset[p] >= 0;
        if (!sounding)
            sampler_forbid(s, v->note_off_base + p - v->min_pitch);
        /* re-striking a sounding pitch ends it first: the count does not grow */
        if (!sounding && max_held > 0 && held >= max_held)
            sampler_forbid(s, v->note_on_base + p - v->min_pitch);
    }
    if (!s->opts.filter_time)
        for (int i = 0; i < v->n_time_shifts; i++)
            sampler_protect(s, v->time_shift_base + i);
}

float sampler_random(sampler *s)
{
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return (float)((s->rng * 0x2545f4914f6cdd1dull) >> 40) * 0x1p-24f;
}

static int argmax(const sampler *s, const float *logits, int masked)
{
    int best = -1;
    for (int i = 0; i < s->vocab_size; i++) {
        if (masked && s->forbidden[i] == 1)
            continue;
        if (best < 0 || logits[i] > logits[best])
            best = i;
    }
    return best;
}

/* Most likely first, ties by id: a total order, so the result is unique. */
static int before(const sampler_candidate *x, const sampler_candidate *y)
{
    return x->p > y->p || (x->p == y->p && x->id < y->id);
}

/* Shell sort in place (qsort may allocate; this never does). */
static void sort_candidates(sampler_candidate *a, int n)
{
    static const int gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };
    for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
        int gap = gaps[g];
        for (int i = gap; i < n; i++) {
            sampler_candidate t = a[i];
            int j = i;
            for (; j >= gap && before(&t, &a[j - gap]); j -= gap)
                a[j] = a[j - gap];
            a[j] = t;
        }
    }
}

int sampler_sample(sampler *s, const float *logits)
{
    int best = argmax(s, logits, 1);
    if (best < 0)
        return argmax(s, logits, 0);
    if (s->opts.temperature <= 0)
        return best;
    const sampler_opts *o = &s->opts;
    float inv_t = 1.0f / o->temperature, mx = logits[best];
    int n = 0;
    double sum = 0;
    for (int i = 0; i < s->vocab_size; i++) {
        if (s->forbidden[i] == 1 || !isfinite(logits[i])) {
            s->probs[i] = 0;
            continue;
        }
        s->probs[i] = expf((logits[i] - mx) * inv_t);
        sum += s->probs[i];
        s->order[n++].id = i;
    }
    for (int k = 0; k < n; k++)
        s->order[k].p = (float)(s->probs[s->order[k].id] / sum);
    /* candidates, most likely first, when a filter needs the order */
    if (o->top_k > 0 || o->min_p > 0 || o->top_p < 1)
        sort_candidates(s->order, n);
    int keep = n;
    if (o->top_k > 0 && o->top_k < keep)
        keep = o->top_k;
    if (o->min_p > 0) {
        float floor_p = o->min_p * s->order[0].p;
        int k = 1;
        while (k < keep && s->order[k].p >= floor_p)
            k++;
        keep = k;
    }
    if (o->top_p < 1) {
        double c = 0;
        int k = 0;
        while (k < keep) {
            c += s->order[k++].p;
            if (c >= o->top_p)
                break;
        }
        keep = k;
    }
    /* protected candidates the filters cut come back, in order (what they
     * overwrite was cut) */
    int w = keep;
    for (int k = keep; k < n; k++)
        if (s->forbidden[s->order[k].id] == 2)
            s->order[w++] = s->order[k];
    keep = w;
    double mass = 0;
    for (int k = 0; k < keep; k++)
        mass += s->order[k].p;
    double r = sampler_random(s) * mass, c = 0;
    for (int k = 0; k < keep; k++) {
        c += s->order[k].p;
        if (r < c)
            return s->order[k].id;
    }
    return s->order[keep - 1].id;
}
