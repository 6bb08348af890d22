/* test_fork.c: a candidate plays what a continuation with its seed plays alone, and the home chosen from them goes on as it did, its watchers' attention included; a re-roll's first note has its attention too; on a tiny random model (no shipped model file). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "model/model.h"
#include "play/candidates.h"
#include "play/continuation.h"
#include "play/play_options.h"

#define N_CAND   4
#define MAX_EV   4096
#define SECONDS  (2 * CANDIDATES_HORIZON_S)   /* hundreds of ids: far past the model's context of 8 */

typedef struct take {
    cont_event     ev[MAX_EV];
    int            n;
    int            ids;         /* ids sampled on the way */
    note_attention heads[MAX_EV];   /* each note-on's, while watched (heads[i] for ev[i]) */
    int            missing;     /* note-ons handed out without any */
} take;

static model        m;
static const vocab *v;

/* A phrase of eight notes up a C major scale, a quarter of a second each. */
static int hear_phrase(continuation *c, double *end)
{
    static const uint8_t scale[8] = { 60, 62, 64, 65, 67, 69, 71, 72 };
    for (int i = 0; i < 8; i++) {
        smf_event on = { .time = 0.25 * i, .status = 0x90, .data1 = scale[i], .data2 = (uint8_t)(60 + 4 * i) };
        smf_event off = { .time = 0.25 * i + 0.2, .status = 0x80, .data1 = scale[i] };
        if (continuation_hear(c, &on) != 0 || continuation_hear(c, &off) != 0)
            return -1;
    }
    *end = 7 * 0.25 + 0.2;
    return 0;
}

/* A continuation over the model in MEMORY that has heard the phrase and
 * begun with SEED, watched (serve with watchers: each note-on's sources
 * kept).  0, or -1. */
static int begun(continuation *c, model_memory memory, uint64_t seed)
{
    double end;
    cont_spec spec = { .seed = seed, .seconds = SECONDS, .max_events = INT32_MAX };
    play_default(&spec.play);
    if (continuation_init(c, &m, v, m.cfg.context, 1, memory, spec.play.max_note_ms / 1000.0, 0) != 0)
        return -1;
    continuation_watch(c, 1);
    if (hear_phrase(c, &end) != 0 || continuation_begin(c, end, &spec) != 0) {
        continuation_free(c);
        return -1;
    }
    return 0;
}

/* Every event C hands out, to its end, into T, with each note-on's
 * sources as serve's generator asks for them (as it hands the note out). */
static int play_out(continuation *c, take *t)
{
    int rc;
    t->n = t->missing = 0;
    while (t->n < MAX_EV && (rc = continuation_next(c, &t->ev[t->n])) > 0) {
        if (t->ev[t->n].kind == CONT_NOTE_ON) {
            const note_attention *a = continuation_note_attention(c, t->ev[t->n].note);
            if (a)
                t->heads[t->n] = *a;
            t->missing += !a;
        }
        t->n++;
    }
    t->ids = continuation_n_sampled(c);
    return t->n < MAX_EV && rc == 0 ? 0 : -1;
}

static int same_events(const cont_event *a, int na, const cont_event *b, int nb)
{
    if (na != nb)
        return 0;
    for (int i = 0; i < na; i++)
        if (a[i].time != b[i].time || a[i].kind != b[i].kind || a[i].pitch != b[i].pitch
            || a[i].velocity != b[i].velocity)
            return 0;
    return 1;
}

/* The sources of the note-ons of A and B (events of the same music) are
 * the same notes, with the same weights but for the rounding of a
 * batched decode. */
static int same_heads(const take *a, const take *b)
{
    for (int i = 0; i < a->n && i < b->n; i++) {
        if (a->ev[i].kind != CONT_NOTE_ON)
            continue;
        const note_attention *x = &a->heads[i], *y = &b->heads[i];
        if (x->note != y->note || x->n_heads != y->n_heads)
            return 0;
        for (int h = 0; h < x->n_heads; h++) {
            if (x->n[h] != y->n[h])
                return 0;
            for (int j = 0; j < x->n[h]; j++)
                if (x->src[h][j] != y->src[h][j] || fabsf(x->weight[h][j] - y->weight[h][j]) > 1e-4f)
                    return 0;
        }
    }
    return 1;
}

/* Alone: candidate I's seed played by a continuation of its own. */
static void play_alone(model_memory memory, uint64_t seed, take *alone)
{
    for (int i = 0; i < N_CAND; i++) {
        continuation c;
        alone[i].n = 0;
        CHECK(begun(&c, memory, candidates_seed(seed, i)) == 0);
        CHECK(play_out(&c, &alone[i]) == 0);
        CHECK(continuation_end(&c) == 0);
        CHECK(alone[i].missing == 0);
        continuation_free(&c);
    }
}

/* A is the first NA events of B (all of them when WHOLE). */
static int prefix_of(const cont_event *a, int na, const take *b, int whole)
{
    return (whole ? na == b->n : na <= b->n) && same_events(a, na, b->ev, na);
}

/* The same seeds as candidates in one batch, stepped to their ends or
 * (STEPS > 0) for that many batched decodes: each plays what its seed
 * plays alone, and the home chosen goes on as candidate CHOSEN did, by
 * its events and then (cut short) sampling on from its state. */
static void check_forks(model_memory memory, uint64_t seed, int chosen, int steps)
{
    static take alone[N_CAND], home_take;
    play_alone(memory, seed, alone);
    for (int i = 0; i < N_CAND; i++)
        CHECK(alone[i].ids > 8 * m.cfg.context);
    CHECK(!same_events(alone[0].ev, alone[0].n, alone[1].ev, alone[1].n));     /* the seeds differ */

    continuation home;
    candidates k;
    CHECK(begun(&home, memory, seed) == 0);
    CHECK(candidates_init(&k, &home, N_CAND) == 0);
    CHECK(candidates_start(&k, N_CAND) == 0);
    int going = 0;
    for (int s = 0; (steps <= 0 || s < steps) && (going = candidates_step(&k)) > 0; s++)
        ;
    CHECK(steps > 0 ? going == N_CAND : going == 0);
    for (int i = 0; i < N_CAND; i++) {
        if (!prefix_of(k.ev[i], k.n_ev[i], &alone[i], steps <= 0))
            fprintf(stderr, "memory %s, seed %llu: candidate %d played %d events, alone %d, not the same\n",
                    model_memory_name(memory), (unsigned long long)seed, i, k.n_ev[i], alone[i].n);
        CHECK(prefix_of(k.ev[i], k.n_ev[i], &alone[i], steps <= 0));
    }
    CHECK(candidates_choose(&k, chosen) == 0);
    CHECK(play_out(&home, &home_take) == 0);
    CHECK(prefix_of(home_take.ev, home_take.n, &alone[chosen], 1));
    /* a watcher gets the sources of every note-on, those the candidate
     * chose and those the home samples after it: the same as alone */
    if (home_take.missing)
        fprintf(stderr, "memory %s, seed %llu, steps %d: %d note-ons of the home chosen without sources\n",
                model_memory_name(memory), (unsigned long long)seed, steps, home_take.missing);
    CHECK(home_take.missing == 0);
    CHECK(same_heads(&home_take, &alone[chosen]));
    CHECK(continuation_end(&home) == 0);
    candidates_free(&k);
    continuation_free(&home);
}

/* candidates_play judges them on their first CANDIDATES_HORIZON_S (SECONDS
 * is twice that): they stop there, and the home chosen plays what its seed
 * plays alone, to the end. */
static void check_horizon(model_memory memory, uint64_t seed)
{
    static take alone[N_CAND], home_take;
    play_alone(memory, seed, alone);
    continuation home;
    candidates k;
    CHECK(begun(&home, memory, seed) == 0);
    CHECK(candidates_init(&k, &home, N_CAND) == 0);
    CHECK(candidates_start(&k, N_CAND) == 0);
    int best = candidates_play(&k, 1e9, LOG_LEVEL_DEBUG, SECONDS);
    CHECK(best >= 0 && best < N_CAND);
    CHECK(candidates_judged(&k));
    for (int i = 0; i < N_CAND; i++) {
        CHECK(k.n_ev[i] < alone[i].n);                  /* stopped short of the end */
        CHECK(k.ev[i][k.n_ev[i] - 1].time > CANDIDATES_HORIZON_S);
        CHECK(prefix_of(k.ev[i], k.n_ev[i], &alone[i], 0));
    }
    CHECK(play_out(&home, &home_take) == 0);
    CHECK(prefix_of(home_take.ev, home_take.n, &alone[best], 1));
    CHECK(home_take.missing == 0 && same_heads(&home_take, &alone[best]));
    CHECK(continuation_end(&home) == 0);
    candidates_free(&k);
    continuation_free(&home);
}

/* A re-roll (continuation_rewind: the context rebuilt by one prefill):
 * every note-on it hands out has its sources, the first too when it is sampled straight from the
 * prefill's logits (the phrase ends at its last release: no time shift
 * to decode first).  Returns 1 when the answer begins with a note-on. */
static int check_rewind(model_memory memory, uint64_t seed)
{
    static take first, again;     /* the answer, and the re-roll's */
    continuation c;
    double end;
    cont_spec spec = { .seed = seed, .seconds = 1.0, .max_events = INT32_MAX };
    play_default(&spec.play);
    CHECK(continuation_init(&c, &m, v, m.cfg.context, 1, memory, spec.play.max_note_ms / 1000.0, 0) == 0);
    continuation_watch(&c, 1);
    CHECK(hear_phrase(&c, &end) == 0 && continuation_begin(&c, end, &spec) == 0);
    CHECK(play_out(&c, &first) == 0 && continuation_end(&c) == 0);
    CHECK(continuation_rewind(&c) == 0 && continuation_begin(&c, end, &spec) == 0);
    CHECK(play_out(&c, &again) == 0 && continuation_end(&c) == 0);
    CHECK_INT(again.missing, 0);
    continuation_free(&c);
    return again.n > 0 && again.ev[0].kind == CONT_NOTE_ON;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_fork TINY_MODEL.gguf\n");
        return 2;
    }
    if (model_open(&m, argv[1], &v) != 0)
        return 1;
    check_forks(MODEL_MEMORY_STREAM, 5, 2, 0);
    check_forks(MODEL_MEMORY_WINDOW, 77, 3, 0);
    check_forks(MODEL_MEMORY_STREAM, 9, 1, 12);     /* cut short: the home samples on */
    check_forks(MODEL_MEMORY_WINDOW, 41, 0, 12);
    check_horizon(MODEL_MEMORY_STREAM, 13);
    check_horizon(MODEL_MEMORY_WINDOW, 17);
    int first_on = 0;
    for (uint64_t seed = 1; seed <= 8; seed++)
        first_on += check_rewind(seed % 2 ? MODEL_MEMORY_STREAM : MODEL_MEMORY_WINDOW, seed);
    CHECK(first_on > 0);    /* the case the re-roll check is about came up */
    model_free(&m);
    return CHECK_DONE();
}
