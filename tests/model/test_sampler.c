/* test_sampler.c: sampling knobs, seeds, and the mask the codec's decoder fills (events it would discard). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codec/perf.h"
#include "codec/vocab.h"
#include "model/sampler.h"

/* The codec fills the sampler's mask: the values must agree. */
_Static_assert((int)PERF_NEXT_ALLOWED == (int)SAMPLER_ALLOWED && (int)PERF_NEXT_FORBIDDEN == (int)SAMPLER_FORBIDDEN
               && (int)PERF_NEXT_PROTECTED == (int)SAMPLER_PROTECTED, "mask values");

static sampler make(int V, float temp, int top_k, float top_p, float min_p, uint64_t seed)
{
    sampler s;
    sampling_settings o;
    sampling_default(&o);
    o.temperature = temp;
    o.top_k = top_k;
    o.top_p = top_p;
    o.min_p = min_p;
    if (sampler_init(&s, V, &o, seed) != 0)
        abort();
    return s;
}

static void test_knobs(void)
{
    float lg[4] = { logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f) };
    int counts[4] = { 0 };
    sampler s = make(4, 1.0f, 0, 1.0f, 0.0f, 42);
    for (int i = 0; i < 20000; i++)
        counts[sampler_sample(&s, lg)]++;
    CHECK_NEAR(counts[0] / 20000.0, 0.5, 0.02);
    CHECK_NEAR(counts[1] / 20000.0, 0.3, 0.02);
    CHECK_NEAR(counts[3] / 20000.0, 0.05, 0.01);
    sampler_free(&s);

    struct { float t; int k; float p, mp; int allowed; } cases[] = {
        { 0.0f, 0, 1.0f, 0.0f, 1 },     /* greedy */
        { 1.0f, 1, 1.0f, 0.0f, 1 },     /* top-k 1 */
        { 1.0f, 2, 1.0f, 0.0f, 2 },     /* top-k 2 */
        { 1.0f, 0, 0.7f, 0.0f, 2 },     /* 0.5 + 0.3 >= 0.7 */
        { 1.0f, 0, 1.0f, 0.5f, 2 },     /* >= 0.25 */
        { 1.0f, 0, 1.0f, 0.2f, 3 },     /* >= 0.1 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int seen[4] = { 0 };
        s = make(4, cases[c].t, cases[c].k, cases[c].p, cases[c].mp, 5);
        for (int i = 0; i < 3000; i++)
            seen[sampler_sample(&s, lg)] = 1;
        int n = seen[0] + seen[1] + seen[2] + seen[3];
        CHECK_INT(n, cases[c].allowed);
        CHECK(seen[0]);
        sampler_free(&s);
    }
    /* a high temperature flattens: the rarest event becomes common */
    s = make(4, (float)SAMPLING_TEMPERATURE_MAX, 0, 1.0f, 0.0f, 9);
    int rare = 0;
    for (int i = 0; i < 4000; i++)
        rare += sampler_sample(&s, lg) == 3;
    CHECK(rare > 600);
    sampler_free(&s);
}

static void test_seed(void)
{
    float lg[50];
    for (int i = 0; i < 50; i++)
        lg[i] = (float)sin(i) * 2;
    int a[100], b[100], c[100];
    sampler s1 = make(50, 1.0f, 0, 0.95f, 0.0f, 123), s2 = make(50, 1.0f, 0, 0.95f, 0.0f, 123),
            s3 = make(50, 1.0f, 0, 0.95f, 0.0f, 124);
    for (int i = 0; i < 100; i++) {
        a[i] = sampler_sample(&s1, lg);
        b[i] = sampler_sample(&s2, lg);
        c[i] = sampler_sample(&s3, lg);
    }
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0);

    /* Re-configured (how the service starts each continuation): the same
     * draws as a fresh sampler with those options, and a bad option leaves
     * the sampler as it was. */
    sampling_settings o = s3.set;
    o.top_p = 2.0f;
    float *probs = s3.probs;
    CHECK_INT(sampler_configure(&s3, &o, 123), -1);
    CHECK_INT(s3.seed, 124);
    o.top_p = 0.95f;
    o.temperature = SAMPLING_TEMPERATURE_MAX + 0.5;  /* one set of ranges: the config's and the CLI's */
    CHECK_INT(sampler_configure(&s3, &o, 123), -1);
    o.temperature = 1.0;
    CHECK_INT(sampler_configure(&s3, &o, 123), 0);
    CHECK(s3.probs == probs);            /* nothing re-allocated */
    for (int i = 0; i < 100; i++)
        c[i] = sampler_sample(&s3, lg);
    CHECK(memcmp(a, c, sizeof a) == 0);
    sampler_free(&s1);
    sampler_free(&s2);
    sampler_free(&s3);
}

static void test_mask(void)
{
    const vocab *v = vocab_find("mt310");
    CHECK(v != NULL);
    if (!v)
        return;
    perf_decoder d;
    perf_decoder_init(&d, v, 30.0);
    note_list out = { 0 };
    perf_decoder_push(&d, vocab_id(v, EVENT_NOTE_ON, 60), &out);
    perf_decoder_push(&d, vocab_id(v, EVENT_NOTE_ON, 64), &out);
    sampler s = make(v->size, 1.0f, 0, 1.0f, 0.0f, 1);
    float *lg = calloc((size_t)v->size, sizeof(float));
    int off60 = vocab_id(v, EVENT_NOTE_OFF, 60), off62 = vocab_id(v, EVENT_NOTE_OFF, 62);
    int on62 = vocab_id(v, EVENT_NOTE_ON, 62), on60 = vocab_id(v, EVENT_NOTE_ON, 60);

    uint8_t *mask = sampler_mask(&s);
    perf_decoder_next_mask(&d, 2, 0, 1, mask, s.vocab_size);
    CHECK(!mask[off60]);                 /* sounding: may end */
    CHECK(mask[off62]);                  /* silent: its NOTE_OFF would be discarded */
    CHECK(mask[on62]);                   /* two notes held, the cap is 2 */
    CHECK(!mask[on60]);                  /* re-striking a sounding pitch does not add one */
    CHECK(mask[0] && mask[1]);           /* PAD, EOS */
    CHECK(mask[vocab_id(v, EVENT_TIME_SHIFT, 10)] == SAMPLER_PROTECTED);   /* allowed, protected */
    CHECK(mask[vocab_id(v, EVENT_TIME_SHIFT, 100)] == SAMPLER_PROTECTED);
    CHECK(mask[vocab_id(v, EVENT_VELOCITY, 0)] == SAMPLER_ALLOWED);
    /* even when the model wants a forbidden event most, it is never drawn */
    lg[off62] = 50;
    lg[on62] = 49;
    for (int i = 0; i < 500; i++) {
        int id = sampler_sample(&s, lg);
        CHECK(id != off62 && id != on62);
    }
    perf_decoder_next_mask(&d, 3, 1, 0, mask, s.vocab_size);
    CHECK(!mask[on62]);                  /* the cap is 3 now */
    CHECK(!mask[1]);                     /* EOS allowed when asked */
    CHECK(mask[vocab_id(v, EVENT_TIME_SHIFT, 10)] == SAMPLER_ALLOWED);   /* not protected when not asked */
    sampler_free(&s);
    free(lg);
    note_list_free(&out);
}

/* Time shifts keep the model's own odds under top-p: a long wait the model
 * gives 5 % is still drawn about 5 % of the time, while a pitch of 5 % is
 * cut; with filter_time it is cut like any event. */
static void test_protected_time(void)
{
    const vocab *v = vocab_find("mt310");
    if (!v)
        return;
    perf_decoder d;
    perf_decoder_init(&d, v, 30.0);
    float *lg = malloc(sizeof(float) * (size_t)v->size);
    for (int i = 0; i < v->size; i++)
        lg[i] = -INFINITY;
    int on60 = vocab_id(v, EVENT_NOTE_ON, 60), on61 = vocab_id(v, EVENT_NOTE_ON, 61);
    int on62 = vocab_id(v, EVENT_NOTE_ON, 62), wait = vocab_id(v, EVENT_TIME_SHIFT, 100);
    lg[on60] = logf(0.80f);
    lg[on61] = logf(0.10f);
    lg[on62] = logf(0.05f);
    lg[wait] = logf(0.05f);
    for (int filter = 0; filter <= 1; filter++) {
        sampler s = make(v->size, 1.0f, 0, 0.9f, 0.0f, 77);
        s.set.filter_time = filter;
        perf_decoder_next_mask(&d, 0, 0, !s.set.filter_time, sampler_mask(&s), s.vocab_size);
        int n_wait = 0, n62 = 0, N = 20000;
        for (int i = 0; i < N; i++) {
            int id = sampler_sample(&s, lg);
            n_wait += id == wait;
            n62 += id == on62;
        }
        CHECK_INT(n62, 0);                       /* the pitch tail is cut */
        if (filter)
            CHECK_INT(n_wait, 0);                /* and so is the wait */
        else
            CHECK_NEAR(n_wait / (double)N, 0.05 / 0.95, 0.01);   /* kept: 0.05 of 0.8+0.1+0.05 */
        sampler_free(&s);
    }
    free(lg);
}

int main(void)
{
    test_knobs();
    test_seed();
    test_mask();
    test_protected_time();
    return CHECK_DONE();
}
