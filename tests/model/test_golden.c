/* test_golden.c: the C engine against PyTorch references (train/golden.py): prefill, every decode step, sliding window, rolling cache (stream memory), greedy, sampler seeds; batched decoding against one sequence at a time, to the bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/batch.h"
#include "model/model.h"
#include "model/sampler.h"

/* Allocation counter: the test is linked with --wrap=malloc,calloc,realloc
 * (tests/model/meson.build), so every allocation made by the engine's
 * static library passes through here. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
static long n_allocs;
void *__wrap_malloc(size_t n) { n_allocs++; return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { n_allocs++; return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { n_allocs++; return __real_realloc(p, n); }

/* max |a - b| over the row, relative to max |b|. */
static double rel_err(const float *a, const float *b, int n)
{
    double diff = 0, scale = 1e-6;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        diff = d > diff ? d : diff;
        scale = fabs(b[i]) > scale ? fabs(b[i]) : scale;
    }
    return diff / scale;
}

static int argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

static const gguf_tensor *ref_tensor(const gguf_file *f, const char *name)
{
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        fprintf(stderr, "%s: no tensor %s\n", f->path, name);
        exit(1);
    }
    return t;
}

/* Prefill, then every decode step (with slides), against PyTorch. */
static void check_stream(model_state *s, const gguf_file *ref, const char *what)
{
    const model_config *c = &s->m->cfg;
    int V = c->vocab_size;
    int np = (int)gguf_find_kv(ref, "golden.n_prompt")->u;
    const gguf_tensor *tt = ref_tensor(ref, "tokens");
    const int32_t *tokens = tt->data;
    int T = (int)tt->n_elems;
    const float *pre = ref_tensor(ref, "prefill_logits")->data;
    const float *st = ref_tensor(ref, "stream_logits")->data;
    float *all = malloc(sizeof(float) * (size_t)np * V);
    int ids[4096];
    for (int i = 0; i < T; i++)
        ids[i] = tokens[i];

    model_state_reset(s);
    CHECK_INT(model_prefill(s, ids, np, all), 0);
    double worst = 0;
    for (int i = 0; i < np; i++) {
        double e = rel_err(all + (size_t)i * V, pre + (size_t)i * V, V);
        worst = e > worst ? e : worst;
    }
    fprintf(stderr, "%s: prefill: relative error %.2g\n", what, worst);
    CHECK(worst <= 1e-4);
    CHECK(rel_err(s->logits, st, V) <= 1e-4);
    worst = 0;
    int worst_step = -1;
    long allocs_before = n_allocs;
    for (int k = np; k < T; k++) {
        const float *lg = model_decode(s, ids[k]);
        CHECK(lg != NULL);
        if (!lg)
            break;
        double e = rel_err(lg, st + (size_t)(k - np + 1) * V, V);
        if (e > worst) {
            worst = e;
            worst_step = k;
        }
    }
    long allocs = n_allocs - allocs_before;
    fprintf(stderr, "%s: decode (%d events, %d slides, %ld allocations): worst relative error %.2g at event %d\n",
            what, T - np, s->n_slides, allocs, worst, worst_step);
    CHECK_INT(allocs, 0);           /* the decode path (slides included) allocates nothing */
    CHECK(worst <= 1e-4);
    CHECK(s->n_slides > 0);        /* the sequence is longer than the context: it slid */
    free(all);
}

/* model_slide (what the service does while the player plays) leaves the
 * state a decode's own slide would: the same logits after the next event,
 * and then room for context - keep events without another slide. */
static void check_slide(model_state *s, const gguf_file *ref, const char *what)
{
    const model_config *c = &s->m->cfg;
    const gguf_tensor *tt = ref_tensor(ref, "tokens");
    const int32_t *tokens = tt->data;
    int T = (int)tt->n_elems, V = c->vocab_size;
    if (T < c->context + 1 + (c->context - s->keep))
        return;
    int ids[4096];
    for (int i = 0; i < T; i++)
        ids[i] = tokens[i];
    float *want = malloc(sizeof(float) * (size_t)V);

    int slides = s->n_slides;     /* a running count: not reset */
    model_state_reset(s);
    CHECK_INT(model_prefill(s, ids, c->context, NULL), 0);
    const float *lg = model_decode(s, ids[c->context]);     /* slides inside */
    CHECK_INT(s->n_slides - slides, 1);
    memcpy(want, lg, sizeof(float) * (size_t)V);

    slides = s->n_slides;
    model_state_reset(s);
    CHECK_INT(model_prefill(s, ids, s->keep, NULL), 0);
    CHECK_INT(model_slide(s), 0);                           /* n <= keep: nothing to do */
    CHECK_INT(s->n, s->keep);
    CHECK_INT(s->n_slides - slides, 0);
    CHECK_INT(model_prefill(s, ids, c->context, NULL), 0);
    CHECK_INT(model_slide(s), 0);
    CHECK_INT(s->n, s->keep);
    CHECK_INT(s->n_slides - slides, 1);
    lg = model_decode(s, ids[c->context]);
    CHECK(lg && rel_err(lg, want, V) <= 1e-6);
    for (int k = c->context + 1; k < c->context + (c->context - s->keep); k++)
        model_decode(s, ids[k]);
    CHECK_INT(s->n, c->context);                            /* full again, */
    CHECK_INT(s->n_slides - slides, 1);                     /* without sliding */
    fprintf(stderr, "%s: model_slide: same logits as a decode's own slide\n", what);
    free(want);
}

/* A prefill leaves its last row's attention (model_state_scores), as a
 * decode of that event would: a watcher hears where a note sampled
 * straight after a prefill (a re-roll, a model swapped live) looks. */
static void check_prefill_scores(model_state *s, const gguf_file *ref, const char *what)
{
    const model_config *c = &s->m->cfg;
    const gguf_tensor *tt = ref_tensor(ref, "tokens");
    const int32_t *tokens = tt->data;
    int n = (int)tt->n_elems < c->context ? (int)tt->n_elems : c->context, ids[4096], keys, newest;
    for (int i = 0; i < n; i++)
        ids[i] = tokens[i];
    size_t size = (size_t)c->n_heads * c->context;
    float *want = calloc(size, sizeof(float));
    model_state_reset(s);
    CHECK(model_state_scores(s, &keys, &newest) == NULL);    /* empty */
    CHECK_INT(model_prefill(s, ids, n - 1, NULL), 0);
    CHECK(model_decode(s, ids[n - 1]) != NULL);
    const float *sc = model_state_scores(s, &keys, &newest);
    CHECK(sc != NULL);
    if (sc)
        memcpy(want, sc, sizeof(float) * size);
    model_state_reset(s);
    CHECK(model_state_scores(s, &keys, &newest) == NULL);    /* a reset forgets them */
    CHECK_INT(model_prefill(s, ids, n, NULL), 0);
    sc = model_state_scores(s, &keys, &newest);
    CHECK(sc != NULL);
    CHECK_INT(keys, n);
    CHECK_INT(newest, n - 1);
    double worst = 0;
    for (int h = 0; sc && h < c->n_heads; h++)
        for (int j = 0; j < n; j++) {
            double e = fabs((double)sc[(size_t)h * c->context + j] - want[(size_t)h * c->context + j]);
            worst = e > worst ? e : worst;
        }
    fprintf(stderr, "%s: a prefill's last attention row against a decode's: worst difference %.2g\n", what, worst);
    CHECK(sc && worst <= 1e-4);
    free(want);
}

/* Stream memory (the rolling cache). While the cache has room it is the
 * window: the same logits event for event (3e-5: from a full prompt the
 * stream's one prefill of the context is held against the window's
 * decodes, two orders of summing; on an AVX-512 Xeon the f16 and i8
 * models' AVX2 kernels give 0.7-1.0e-5 there, the f32 ones 5-8e-7). Past the context each
 * event overwrites the oldest and the engine matches PyTorch run the same
 * rolling way (roll_logits), from a short prompt and from a full one (as
 * `continue` starts), with no slide and no allocation. */
static void check_memory(model_state *s, const gguf_file *ref, const char *what)
{
    const model_config *c = &s->m->cfg;
    int V = c->vocab_size, C = c->context;
    int np = (int)gguf_find_kv(ref, "golden.n_prompt")->u;
    const gguf_tensor *tt = ref_tensor(ref, "tokens");
    const int32_t *tokens = tt->data;
    int T = (int)tt->n_elems;
    const float *roll = ref_tensor(ref, "roll_logits")->data;    /* (T, V) */
    float *win = malloc(sizeof(float) * (size_t)C * V);
    int ids[4096];
    for (int i = 0; i < T; i++)
        ids[i] = tokens[i];

    /* window memory up to the context: rows for events np-1 .. C-1 */
    model_state_set_memory(s, MODEL_MEMORY_WINDOW);
    CHECK_INT(model_prefill(s, ids, np, NULL), 0);
    memcpy(win + (size_t)(np - 1) * V, s->logits, sizeof(float) * (size_t)V);
    for (int k = np; k < C; k++)
        memcpy(win + (size_t)k * V, model_decode(s, ids[k]), sizeof(float) * (size_t)V);

    int prompts[2] = { np, C };
    for (int r = 0; r < 2; r++) {
        int p = prompts[r], slides = s->n_slides;
        model_state_set_memory(s, MODEL_MEMORY_STREAM);
        CHECK_INT(model_prefill(s, ids, p, NULL), 0);
        double same = rel_err(s->logits, win + (size_t)(p - 1) * V, V), worst = 0;
        int worst_step = -1;
        long allocs_before = n_allocs;
        for (int k = p; k < T; k++) {
            const float *lg = model_decode(s, ids[k]);
            CHECK(lg != NULL);
            if (!lg)
                break;
            if (k < C) {
                double e = rel_err(lg, win + (size_t)k * V, V);
                same = e > same ? e : same;
            }
            double e = rel_err(lg, roll + (size_t)k * V, V);
            if (e > worst) {
                worst = e;
                worst_step = k;
            }
        }
        long allocs = n_allocs - allocs_before;
        fprintf(stderr, "%s: stream memory from %d events (%d decodes, %ld allocations): vs window "
                "up to the context %.2g, vs PyTorch rolling: worst %.2g at event %d\n",
                what, p, T - p, allocs, same, worst, worst_step);
        CHECK(same <= 3e-5);
        CHECK(worst <= 1e-4);
        CHECK_INT(allocs, 0);
        CHECK_INT(s->n_slides - slides, 0);   /* a rolling cache never slides */
        CHECK_INT(s->n, C);
        CHECK_INT(model_slide(s), 0);         /* nothing to slide: the state is kept */
        CHECK_INT(s->n, C);
    }
    model_state_set_memory(s, MODEL_MEMORY_WINDOW);
    free(win);
}

/* Greedy continuation in stream memory against PyTorch's rolling one. */
static void check_roll_greedy(model_state *s, const gguf_file *ref, const char *what)
{
    int V = s->m->cfg.vocab_size;
    int np = (int)gguf_find_kv(ref, "golden.n_prompt")->u;
    const int32_t *tokens = ref_tensor(ref, "tokens")->data;
    const gguf_tensor *gt = ref_tensor(ref, "roll_greedy");
    const int32_t *want = gt->data;
    int ids[256];
    for (int i = 0; i < np; i++)
        ids[i] = tokens[i];
    model_state_set_memory(s, MODEL_MEMORY_STREAM);
    CHECK_INT(model_prefill(s, ids, np, NULL), 0);
    const float *lg = s->logits;
    int mismatches = 0;
    for (int i = 0; i < (int)gt->n_elems && lg; i++) {
        int t = argmax(lg, V);
        if (t != want[i]) {
            if (!mismatches)
                fprintf(stderr, "%s: rolling greedy event %d: C %d, PyTorch %d\n", what, i, t, want[i]);
            mismatches++;
        }
        lg = model_decode(s, want[i]);
    }
    CHECK_INT(mismatches, 0);
    model_state_set_memory(s, MODEL_MEMORY_WINDOW);
}

static void check_greedy(model_state *s, const gguf_file *ref, const char *what)
{
    int V = s->m->cfg.vocab_size;
    int np = (int)gguf_find_kv(ref, "golden.n_prompt")->u;
    const int32_t *tokens = ref_tensor(ref, "tokens")->data;
    const gguf_tensor *gt = ref_tensor(ref, "greedy");
    const int32_t *want = gt->data;
    int ids[256];
    for (int i = 0; i < np; i++)
        ids[i] = tokens[i];
    sampler sp;
    sampling_settings o;
    sampling_default(&o);
    o.temperature = 0;
    CHECK_INT(sampler_init(&sp, V, &o, 1), 0);
    model_state_reset(s);
    CHECK_INT(model_prefill(s, ids, np, NULL), 0);
    const float *lg = s->logits;
    int mismatches = 0;
    long allocs_before = n_allocs;
    for (int i = 0; i < (int)gt->n_elems && lg; i++) {
        int t = sampler_sample(&sp, lg);
        if (t != argmax(lg, V) || t != want[i]) {
            if (!mismatches)
                fprintf(stderr, "%s: greedy event %d: C %d, PyTorch %d\n", what, i, t, want[i]);
            mismatches++;
        }
        lg = model_decode(s, want[i]);   /* follow PyTorch so one slip is not counted twice */
    }
    CHECK_INT(mismatches, 0);
    CHECK_INT(n_allocs - allocs_before, 0);     /* nor does sampling */
    sampler_free(&sp);
}

/* The same seed gives the same continuation; another seed another one. */
static void check_seeds(model_state *s, const gguf_file *ref)
{
    int V = s->m->cfg.vocab_size;
    int np = (int)gguf_find_kv(ref, "golden.n_prompt")->u;
    const int32_t *tokens = ref_tensor(ref, "tokens")->data;
    int prompt[256], out[3][48];
    for (int i = 0; i < np; i++)
        prompt[i] = tokens[i];
    uint64_t seeds[3] = { 7, 7, 8 };
    for (int r = 0; r < 3; r++) {
        sampler sp;
        sampling_settings o;
        sampling_default(&o);
        o.temperature = 1.5f;
        o.top_p = 0.98f;
        CHECK_INT(sampler_init(&sp, V, &o, seeds[r]), 0);
        model_state_reset(s);
        CHECK_INT(model_prefill(s, prompt, np, NULL), 0);
        const float *lg = s->logits;
        for (int i = 0; i < 48; i++) {
            out[r][i] = sampler_sample(&sp, lg);
            lg = model_decode(s, out[r][i]);
        }
        sampler_free(&sp);
    }
    CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
    CHECK(memcmp(out[0], out[2], sizeof out[0]) != 0);
}

/* The token sequence K of a batch test gets at step T: sequence 0 the
 * reference's events, the others their own. */
static int batch_token(const int32_t *tokens, int np, int V, int k, int t)
{
    int base = tokens[np + t];
    return k == 0 ? base : (base + 37 * k + 11 * t) % V;
}

/* Sequence K steps at step T: the first three always, the others two
 * steps in three, so the caches fill (and slide, or roll) at different
 * steps and a step holds any subset; EVEN: all of them every step, as
 * candidates do (their attention reads the rows they share with the home
 * once for all, until they slide or roll over them). */
static int batch_steps(int k, int t, int even)
{
    return even || k < 3 || (t + k) % 3 != 0;
}

/* A batch of 5 sequences forked from the home state after the prompt,
 * stepped for the rest of the reference's events in MEM: each step's
 * logits of each sequence equal, bit for bit, those of one run state fed
 * that sequence alone; the home is left as it was; adopt hands a sequence
 * back to the home; no step allocates; steps that the pool runs on one
 * thread (a core taken) give the same bits as on all of them. */
static void check_batch(model_state *s, const model *m, const gguf_file *ref, model_memory mem, int threads,
                        int even, const char *what)
{
    enum { B = 5 };
    int V = m->cfg.vocab_size, np = (int)gguf_find_kv(ref, "golden.n_prompt")->u;
    const gguf_tensor *tt = ref_tensor(ref, "tokens");
    const int32_t *tokens = tt->data;
    int steps = (int)tt->n_elems - np, ids[4096], seqs[B], toks[B];
    for (int i = 0; i < np; i++)
        ids[i] = tokens[i];
    float *logs = malloc(sizeof(float) * (size_t)B * steps * V), *home = malloc(sizeof(float) * V);
    model_batch b;
    model_state r;
    CHECK_INT(model_state_init(&r, m, threads), 0);
    model_state_set_memory(s, mem);
    model_state_set_memory(&r, mem);
    CHECK_INT(model_prefill(s, ids, np, NULL), 0);
    memcpy(home, s->logits, sizeof(float) * V);
    CHECK_INT(model_batch_init(&b, s, B), 0);
    for (int k = 0; k < B; k++)
        model_batch_fork(&b, k);
    long allocs_before = n_allocs;
    if (threads > 1)    /* the first half on one thread, as after a stall: the same bits as R's */
        pool_hold_alone(s->pool, steps / 2);
    for (int t = 0; t < steps; t++) {
        int n = 0;
        for (int k = B - 1; k >= 0; k--)        /* items in an order of their own */
            if (batch_steps(k, t, even)) {
                seqs[n] = k;
                toks[n++] = batch_token(tokens, np, V, k, t);
            }
        CHECK_INT(model_batch_decode(&b, seqs, toks, n), 0);
        for (int k = 0; k < B; k++)
            memcpy(logs + ((size_t)k * steps + t) * V, model_batch_logits(&b, k), sizeof(float) * V);
    }
    CHECK_INT(n_allocs - allocs_before, 0);
    if (even)       /* the first steps, at least, read the home's rows once for all */
        CHECK(b.shared_steps > 0);
    int differ = 0;
    for (int k = 0; k < B; k++) {
        CHECK_INT(model_prefill(&r, ids, np, NULL), 0);
        for (int t = 0; t < steps; t++) {
            if (batch_steps(k, t, even))
                model_decode(&r, batch_token(tokens, np, V, k, t));
            if (memcmp(r.logits, logs + ((size_t)k * steps + t) * V, sizeof(float) * V) != 0 && !differ++)
                fprintf(stderr, "%s: batch sequence %d differs from one sequence at step %d\n", what, k, t);
        }
    }
    CHECK_INT(differ, 0);
    CHECK(memcmp(s->logits, home, sizeof(float) * V) == 0);    /* the home is untouched */
    CHECK_INT(s->n, np);
    model_batch_adopt(&b, 3);      /* the home goes on as sequence 3 did */
    model_decode(s, 5);
    CHECK_INT(model_prefill(&r, ids, np, NULL), 0);    /* sequence 3 again, alone */
    for (int t = 0; t < steps; t++)
        if (batch_steps(3, t, even))
            model_decode(&r, batch_token(tokens, np, V, 3, t));
    model_decode(&r, 5);
    CHECK(memcmp(s->logits, r.logits, sizeof(float) * V) == 0);
    fprintf(stderr, "%s: batch of %d, %s memory, %s, %d steps (%ld sharing the home's rows): the same bits as one "
            "sequence (%d differ)\n", what, B, model_memory_name(mem), even ? "all stepping" : "stepping unevenly",
            steps, b.shared_steps, differ);
    model_batch_free(&b);
    model_state_free(&r);
    model_state_set_memory(s, MODEL_MEMORY_WINDOW);
    free(logs);
    free(home);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_golden DIR CASE...\n");
        return 2;
    }
    for (int a = 2; a < argc; a++) {
        char path[1024], rpath[1024];
        snprintf(path, sizeof path, "%s/%s.gguf", argv[1], argv[a]);
        snprintf(rpath, sizeof rpath, "%s/%s.ref.gguf", argv[1], argv[a]);
        model m;
        gguf_file ref;
        if (model_load(&m, path) || gguf_open(&ref, rpath, NULL)) {
            fprintf(stderr, "cannot load %s\n", argv[a]);
            return 1;
        }
        CHECK(n_allocs > 0);    /* the counter does see the engine's allocations */
        for (int level = (int)kernels_best_level(); level >= 0; level--) {
            kernels_set_level((kernel_level)level);
            for (int threads = 1; threads <= 2; threads++) {
                char what[256];
                snprintf(what, sizeof what, "%s (%s, %d thread%s)", argv[a],
                         kernels_level_name((kernel_level)level), threads, threads > 1 ? "s" : "");
                model_state s;
                CHECK_INT(model_state_init(&s, &m, threads), 0);
                check_stream(&s, &ref, what);
                check_slide(&s, &ref, what);
                check_prefill_scores(&s, &ref, what);
                check_greedy(&s, &ref, what);
                check_memory(&s, &ref, what);
                check_roll_greedy(&s, &ref, what);
                for (int even = 0; even <= 1; even++) {
                    check_batch(&s, &m, &ref, MODEL_MEMORY_WINDOW, threads, even, what);
                    check_batch(&s, &m, &ref, MODEL_MEMORY_STREAM, threads, even, what);
                }
                if (threads == 2)
                    check_seeds(&s, &ref);
                model_state_free(&s);
                fprintf(stderr, "%s: checked\n", what);
            }
        }
        gguf_close(&ref);
        model_free(&m);
    }
    return CHECK_DONE();
}
