/* test_knobs.c: the knobs' arithmetic, the masked sums and the motif's note order on stub logits, without a model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codec/follow.h"
#include "codec/perf.h"
#include "codec/vocab.h"
#include "model/sampler.h"
#include "play/key_fit.h"
#include "play/knobs.h"
#include "play/odds.h"
#include "play/play_options.h"

#define MAX_IDS 1024

/* One step's stub: the default layout, logits that lean one way, the
 * mask all allowed, nothing sounding, nothing heard. */
typedef struct stub {
    const vocab  *v;
    int           n;
    float         logits[MAX_IDS];
    uint8_t       mask[MAX_IDS];
    perf_follow   follow;
    perf_decoder  dec;
    uint8_t       model_on[128];
    knobs_heard   heard;
    play_settings p;
} stub;

static void stub_init(stub *s)
{
    memset(s, 0, sizeof *s);
    s->v = vocab_default();
    s->n = s->v->size;
    if (s->n > MAX_IDS)
        abort();
    for (int i = 0; i < s->n; i++)      /* uneven, so that no knob is a no-op by symmetry */
        s->logits[i] = (float)(0.7 * sin(0.37 * i) - 0.002 * i);
    perf_follow_init(&s->follow, 0, 0);
    perf_decoder_init(&s->dec, s->v, 5.0);
    play_default(&s->p);
    s->p.motif = 0;                     /* every knob neutral; a test turns one */
    s->p.release = 0;
}

static void steer(stub *s)
{
    knobs_view k = { s->v, s->mask, &s->follow, &s->dec, s->model_on, &s->heard };
    knobs_steer(&s->p, &k, s->logits);
}

/* The probability of ids BASE..BASE+N-1 among all the ids the mask allows. */
static double class_mass(const stub *s, int base, int n)
{
    double all = odds_log_sum_exp(s->logits, s->mask, s->n);
    double part = odds_log_sum_exp(s->logits + base, s->mask + base, n);
    return exp(part - all);
}

/* The mean of X[i] under the odds of ids BASE..BASE+N-1 the mask allows. */
static double class_mean(const stub *s, int base, int n, const double *x)
{
    double w[256], top = odds_top(s->logits + base, s->mask + base, n);
    double total = odds_exp_sum(s->logits + base, s->mask + base, n, top, w), m = 0;
    for (int i = 0; i < n; i++)
        m += w[i] * x[i];
    return m / total;
}

static int n_pitch(const vocab *v)
{
    return v->max_pitch - v->min_pitch + 1;
}

static void test_odds(void)
{
    float l[4] = { 1, 3, 2, 50 };
    uint8_t mask[4] = { SAMPLER_ALLOWED, SAMPLER_PROTECTED, SAMPLER_ALLOWED, SAMPLER_FORBIDDEN };
    double w[4];
    CHECK_NEAR(odds_top(l, mask, 4), 3, 0);
    CHECK_NEAR(odds_top(l, NULL, 4), 50, 0);
    CHECK_NEAR(odds_exp_sum(l, mask, 4, 3, w), exp(-2.0) + 1 + exp(-1.0), 1e-12);
    CHECK_NEAR(w[3], 0, 0);             /* forbidden: no weight */
    CHECK_NEAR(w[1], 1, 1e-12);
    CHECK_NEAR(odds_log_sum_exp(l, mask, 4), log(exp(1.0) + exp(3.0) + exp(2.0)), 1e-9);
}

/* pitch_temperature reweighs the note-ons among themselves: sharper, and
 * their total probability among all the ids allowed stays. */
static void test_class_keeps_its_total(void)
{
    stub s;
    stub_init(&s);
    const vocab *v = s.v;
    int n = n_pitch(v);
    for (int i = 0; i < 10; i++)        /* some forbidden note-ons stay out of the total */
        s.mask[v->note_on_base + 3 * i] = SAMPLER_FORBIDDEN;
    double mass = class_mass(&s, v->note_on_base, n);
    int top = v->note_on_base + 1;
    for (int i = 0; i < n; i++)
        if (!s.mask[v->note_on_base + i] && s.logits[v->note_on_base + i] > s.logits[top])
            top = v->note_on_base + i;
    double share = exp(s.logits[top] - odds_log_sum_exp(s.logits + v->note_on_base, s.mask + v->note_on_base, n));
    s.p.pitch_temperature = 0.5;
    steer(&s);
    CHECK_NEAR(class_mass(&s, v->note_on_base, n), mass, 1e-5);
    double after = exp(s.logits[top] - odds_log_sum_exp(s.logits + v->note_on_base, s.mask + v->note_on_base, n));
    CHECK(after > share * 1.2);         /* the likeliest note-on likelier still */
}

/* register: the mean pitch of the note-ons' odds moves by 0.2 x the shift
 * asked (up and down), and the note-ons keep their total. */
static void test_register(void)
{
    for (int shift = -5; shift <= 5; shift += 10) {
        stub s;
        stub_init(&s);
        const vocab *v = s.v;
        int n = n_pitch(v);
        double x[128];
        for (int i = 0; i < n; i++)
            x[i] = i;
        double mean = class_mean(&s, v->note_on_base, n, x), mass = class_mass(&s, v->note_on_base, n);
        s.p.register_shift = shift;
        steer(&s);
        CHECK_NEAR(class_mean(&s, v->note_on_base, n, x) - mean, 0.2 * shift, 1e-3);
        CHECK_NEAR(class_mass(&s, v->note_on_base, n), mass, 1e-5);
    }
}

/* density d: each note-on's odds times d^1.2 against every other id. */
static void test_density(void)
{
    stub s;
    stub_init(&s);
    const vocab *v = s.v;
    float before[MAX_IDS];
    memcpy(before, s.logits, sizeof before);
    s.p.density = 2;
    steer(&s);
    for (int i = 0; i < n_pitch(v); i++)
        CHECK_NEAR(s.logits[v->note_on_base + i] - before[v->note_on_base + i], 1.2 * log(2.0), 1e-5);
    CHECK_NEAR(s.logits[v->time_shift_base], before[v->time_shift_base], 0);
    CHECK_NEAR(s.logits[v->note_off_base], before[v->note_off_base], 0);
}

/* velocity: the velocity bins' odds pulled toward the target's bin, the
 * nearer the likelier, their total kept. */
static void test_velocity(void)
{
    stub s;
    stub_init(&s);
    const vocab *v = s.v;
    int nb = v->n_velocity_bins, target = velocity_to_bin(v, 100);
    double mass = class_mass(&s, v->velocity_base, nb);
    s.p.velocity = 100;
    steer(&s);
    const float *l = s.logits + v->velocity_base;
    int best = 0;
    for (int b = 1; b < nb; b++)
        best = l[b] > l[best] ? b : best;
    CHECK_INT(best, target);
    CHECK(l[target - 1] > l[target - 3] && l[target + 1] > l[target + 3]);
    CHECK_NEAR(class_mass(&s, v->velocity_base, nb), mass, 1e-5);
}

/* rhythm_temperature: the waits' odds sharper (the likeliest wait likelier),
 * the mean wait kept, their total kept. */
static void test_rhythm(void)
{
    stub s;
    stub_init(&s);
    const vocab *v = s.v;
    int n = v->n_time_shifts, top = 0;
    double x[256];
    for (int i = 0; i < n; i++) {
        x[i] = i + 1.0;
        top = s.logits[v->time_shift_base + i] > s.logits[v->time_shift_base + top] ? i : top;
    }
    double mean = class_mean(&s, v->time_shift_base, n, x), mass = class_mass(&s, v->time_shift_base, n);
    double p_top = exp(s.logits[v->time_shift_base + top]) / exp(odds_log_sum_exp(s.logits + v->time_shift_base, NULL, n));
    s.p.rhythm_temperature = 0.5;
    steer(&s);
    CHECK_NEAR(class_mean(&s, v->time_shift_base, n, x), mean, 1e-3 * mean);
    CHECK_NEAR(class_mass(&s, v->time_shift_base, n), mass, 1e-5);
    CHECK(exp(s.logits[v->time_shift_base + top]) / exp(odds_log_sum_exp(s.logits + v->time_shift_base, NULL, n))
          > p_top * 1.2);
}

/* release: only a note of the continuation's held past 40 % of the cap has
 * its NOTE_OFF raised, by release x 6 x (age - 2 s) / 3 s at the 5 s cap. */
static void test_release(void)
{
    stub s;
    stub_init(&s);
    const vocab *v = s.v;
    float before[MAX_IDS];
    memcpy(before, s.logits, sizeof before);
    s.dec.time = 10;
    s.dec.onset[60] = 6;                /* the model's, held 4 s */
    s.model_on[60] = 1;
    s.dec.onset[62] = 6;                /* the player's, held 4 s */
    s.dec.onset[64] = 9;                /* the model's, held 1 s */
    s.model_on[64] = 1;
    s.p.max_note_ms = 5000;
    s.p.release = 1;
    steer(&s);
    int off = v->note_off_base - v->min_pitch;
    CHECK_NEAR(s.logits[off + 60] - before[off + 60], 6.0 * 2 / 3, 1e-5);
    CHECK_NEAR(s.logits[off + 62], before[off + 62], 0);
    CHECK_NEAR(s.logits[off + 64], before[off + 64], 0);
}

static void push_note(perf_follow *f, const vocab *v, int pitch, double t)
{
    perf_follow_push(f, v, vocab_id(v, EVENT_NOTE_ON, pitch), t);
}

/* motif: the last note-ons 67 69 71 repeat the heard 60 62 64 a fifth up;
 * the heard run went on to 65, so 72 counts (two intervals matched: 1),
 * and 73 a little (one interval: 0.3, after 60 62 -> 64). */
static void test_motif(void)
{
    stub s;
    stub_init(&s);
    const vocab *v = s.v;
    unsigned char phrase[] = { 60, 62, 64, 65 };
    memcpy(s.heard.phrase, phrase, sizeof phrase);
    s.heard.n_phrase = 4;
    push_note(&s.follow, v, 67, 1);
    push_note(&s.follow, v, 69, 2);
    push_note(&s.follow, v, 71, 3);
    float counts[128];
    CHECK(knobs_motif_counts(&s.heard, &s.follow, counts));
    CHECK_NEAR(counts[72], 1, 1e-6);
    CHECK_NEAR(counts[73], 0.3, 1e-6);
    float sum = 0;
    for (int p = 0; p < 128; p++)
        sum += counts[p];
    CHECK_NEAR(sum, 1.3, 1e-6);
    /* on the logits: 72 gains 4 ln 2 against a pitch that counts nothing */
    int on = v->note_on_base - v->min_pitch;
    float gap = s.logits[on + 72] - s.logits[on + 70];
    s.p.motif = 1;
    steer(&s);
    CHECK_NEAR(s.logits[on + 72] - s.logits[on + 70] - gap, 4 * log(2.0), 1e-4);
}

/* The phrase heard: the window's note-ons only, a chord low to high. */
static void test_heard_phrase(void)
{
    stub s;
    stub_init(&s);
    const vocab *v = s.v;
    push_note(&s.follow, v, 64, 1);     /* older than FOLLOW_WINDOW_S at 20 s */
    push_note(&s.follow, v, 67, 15);
    push_note(&s.follow, v, 60, 15);
    push_note(&s.follow, v, 62, 16);
    knobs_begin(&s.heard, &s.follow, &s.p, 20);
    CHECK_INT(s.heard.n_phrase, 3);
    CHECK_INT(s.heard.phrase[0], 60);
    CHECK_INT(s.heard.phrase[1], 67);
    CHECK_INT(s.heard.phrase[2], 62);
    CHECK_INT(s.heard.have_scale, 0);   /* no key_lock */
}

/* The key heard (key_lock = auto and the phrase end's cues): A minor's
 * scale with its tonic triad most is A minor, clearly; its relative C major
 * with C major's triad most is C major; the same notes a fifth up are in
 * the dominant's key, not the tonic's; nothing, or every class alike, has
 * no key. */
static void test_key_fit(void)
{
    static const unsigned char a_minor[12] = { 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1 };
    double h[12];
    int tonic, minor;
    for (int i = 0; i < 12; i++)
        h[i] = a_minor[i] ? 2 : 0;
    h[9] = h[0] = h[4] = 5;             /* A, C, E */
    CHECK(key_fit(h, &tonic, &minor) > 0.8);
    CHECK_INT(tonic, 9);
    CHECK_INT(minor, 1);
    h[9] = 2;
    h[7] = 5;                           /* C, E, G */
    CHECK(key_fit(h, &tonic, &minor) > 0.8);
    CHECK_INT(tonic, 0);
    CHECK_INT(minor, 0);
    double up[12];
    for (int i = 0; i < 12; i++)
        up[(i + 7) % 12] = h[i];
    key_fit(up, &tonic, &minor);
    CHECK_INT(tonic, 7);
    CHECK_INT(minor, 0);
    for (int i = 0; i < 12; i++)
        h[i] = 3;
    CHECK(key_fit(h, &tonic, &minor) == KEY_FIT_NONE);
    memset(h, 0, sizeof h);
    CHECK(key_fit(h, &tonic, &minor) == KEY_FIT_NONE);
    CHECK_INT(tonic, 0);
}

/* key_lock with key auto: the scale nearest the classes heard. */
static void test_nearest_scale(void)
{
    static const unsigned char c_major[12] = { 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1 };
    static const unsigned char d_major[12] = { 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1 };
    double n_c[12] = { 0 };
    unsigned char scale[12];
    for (int i = 0; i < 12; i++)
        n_c[i] = c_major[i] ? 2 : 0;
    n_c[0] = n_c[4] = n_c[7] = 5;       /* the tonic triad most */
    CHECK(knobs_nearest_scale(n_c, scale));
    CHECK(memcmp(scale, c_major, 12) == 0);
    for (int i = 0; i < 12; i++)
        n_c[i] = d_major[i] ? 2 : 0;
    n_c[2] = n_c[6] = n_c[9] = 5;
    CHECK(knobs_nearest_scale(n_c, scale));
    CHECK(memcmp(scale, d_major, 12) == 0);
    memset(n_c, 0, sizeof n_c);
    CHECK(!knobs_nearest_scale(n_c, scale));

    stub s;
    stub_init(&s);
    int run[] = { 60, 64, 67, 72, 62, 65, 69, 71, 60, 67 };
    for (int i = 0; i < 10; i++)
        push_note(&s.follow, s.v, run[i], 1 + i);
    s.p.key_lock = 1;
    knobs_begin(&s.heard, &s.follow, &s.p, 12);
    CHECK_INT(s.heard.have_scale, 1);
    CHECK(memcmp(s.heard.scale, c_major, 12) == 0);
}

static void test_chord_order(void)
{
    unsigned char p[8];
    double at[8];
    int n = 0;
    n = chord_order_insert(p, at, n, 64, 1.0);
    n = chord_order_insert(p, at, n, 67, 2.0);
    n = chord_order_insert(p, at, n, 60, 2.0);     /* struck with 67: goes before it */
    n = chord_order_insert(p, at, n, 62, 2.0);
    n = chord_order_insert(p, at, n, 55, 3.0);     /* later: last, however low */
    CHECK_INT(n, 5);
    const unsigned char want[] = { 64, 60, 62, 67, 55 };
    for (int i = 0; i < 5; i++)
        CHECK_INT(p[i], want[i]);
    CHECK_NEAR(at[3], 2.0, 0);
    CHECK_NEAR(at[4], 3.0, 0);
}

/* Every knob at its neutral value leaves the logits as they were. */
static void test_neutral(void)
{
    stub s;
    stub_init(&s);
    float before[MAX_IDS];
    memcpy(before, s.logits, sizeof before);
    steer(&s);
    CHECK(memcmp(before, s.logits, sizeof(float) * (size_t)s.n) == 0);
}

int main(void)
{
    test_odds();
    test_class_keeps_its_total();
    test_register();
    test_density();
    test_velocity();
    test_rhythm();
    test_release();
    test_motif();
    test_heard_phrase();
    test_key_fit();
    test_nearest_scale();
    test_chord_order();
    test_neutral();
    return CHECK_DONE();
}
