/* sampler.c: temperature, top-k, top-p and min-p sampling over masked logits, with a seeded RNG. */
#include "model/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

void sampling_default(sampling_settings *o)
{
    o->temperature = PLAY_TEMPERATURE;
    o->top_k = PLAY_TOP_K;
    o->top_p = PLAY_TOP_P;
    o->min_p = PLAY_MIN_P;
    o->filter_time = PLAY_FILTER_TIME;
    o->pace = PLAY_PACE;
    o->key_pull = PLAY_KEY_PULL;
}

int sampler_configure(sampler *s, const sampling_settings *o, uint64_t seed)
{
    if (!(o->temperature >= SAMPLING_TEMPERATURE_MIN && o->temperature <= SAMPLING_TEMPERATURE_MAX)
        || o->top_k < SAMPLING_TOP_K_MIN || o->top_k > SAMPLING_TOP_K_MAX
        || !(o->top_p >= SAMPLING_TOP_P_MIN && o->top_p <= SAMPLING_TOP_P_MAX)
        || !(o->min_p >= SAMPLING_MIN_P_MIN && o->min_p <= SAMPLING_MIN_P_MAX)) {
        log_error("sampler: bad settings (temperature %g in %g..%g, top-k %d in %d..%d, top-p %g in %g..%g, "
                  "min-p %g in %g..%g)", o->temperature, SAMPLING_TEMPERATURE_MIN, SAMPLING_TEMPERATURE_MAX,
                  o->top_k, SAMPLING_TOP_K_MIN, SAMPLING_TOP_K_MAX, o->top_p, SAMPLING_TOP_P_MIN,
                  SAMPLING_TOP_P_MAX, o->min_p, SAMPLING_MIN_P_MIN, SAMPLING_MIN_P_MAX);
        return -1;
    }
    s->set = *o;
    s->temperature = (float)o->temperature;
    s->top_p = (float)o->top_p;
    s->min_p = (float)o->min_p;
    s->seed = seed;
    /* splitmix64 of the seed: any seed (0 too) gives a non-zero xorshift state */
    uint64_t z = seed + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    s->rng = (z ^ (z >> 31)) | 1;
    return 0;
}

int sampler_init(sampler *s, int vocab_size, const sampling_settings *o, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    if (sampler_configure(s, o, seed) < 0)
        return -1;
    s->vocab_size = vocab_size;
    s->probs = malloc(sizeof(float) * (size_t)vocab_size);
    s->order = malloc(sizeof *s->order * (size_t)vocab_size);
    s->mask = calloc((size_t)vocab_size, 1);
    if (!s->probs || !s->order || !s->mask) {
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
    free(s->mask);
    memset(s, 0, sizeof *s);
}

uint8_t *sampler_mask(sampler *s)
{
    return s->mask;
}

void sampler_forbid(sampler *s, int id)
{
    if (id >= 0 && id < s->vocab_size)
        s->mask[id] = SAMPLER_FORBIDDEN;
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
        if (masked && s->mask[i] == SAMPLER_FORBIDDEN)
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

/* Softmax at the temperature over the ids that may come next (BEST is the
 * largest logit among them): fills probs, and order with each candidate's
 * id and probability; returns how many candidates. */
static int weigh_candidates(sampler *s, const float *logits, int best)
{
    float inv_t = 1.0f / s->temperature, mx = logits[best];
    int n = 0;
    double sum = 0;
    for (int i = 0; i < s->vocab_size; i++) {
        if (s->mask[i] == SAMPLER_FORBIDDEN || !isfinite(logits[i])) {
            s->probs[i] = 0;
            continue;
        }
        s->probs[i] = expf((logits[i] - mx) * inv_t);
        sum += s->probs[i];
        s->order[n++].id = i;
    }
    for (int k = 0; k < n; k++)
        s->order[k].p = (float)(s->probs[s->order[k].id] / sum);
    return n;
}

/* How many of the N candidates top-k, min-p and top-p keep; sorts them,
 * most likely first, when a filter needs the order. */
static int filter_candidates(sampler *s, int n)
{
    int top_k = s->set.top_k;
    if (top_k > 0 || s->min_p > 0 || s->top_p < 1)
        sort_candidates(s->order, n);
    int keep = n;
    if (top_k > 0 && top_k < keep)
        keep = top_k;
    if (s->min_p > 0) {
        float floor_p = s->min_p * s->order[0].p;
        int k = 1;
        while (k < keep && s->order[k].p >= floor_p)
            k++;
        keep = k;
    }
    if (s->top_p < 1) {
        double c = 0;
        int k = 0;
        while (k < keep) {
            c += s->order[k++].p;
            if (c >= s->top_p)
                break;
        }
        keep = k;
    }
    return keep;
}

int sampler_sample(sampler *s, const float *logits)
{
    int best = argmax(s, logits, 1);
    if (best < 0)
        return argmax(s, logits, 0);
    if (s->temperature <= 0)
        return best;
    int n = weigh_candidates(s, logits, best);
    int keep = filter_candidates(s, n);
    /* protected candidates the filters cut come back, in order (what they
     * overwrite was cut) */
    int w = keep;
    for (int k = keep; k < n; k++)
        if (s->mask[s->order[k].id] == SAMPLER_PROTECTED)
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
