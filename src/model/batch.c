/* batch.c: several sequences forked from one run state and decoded together: their caches, forks and adopts, slots and shared rows; each step is forward.c's (model_step_run), so each one's bits are model_decode's. */
#include "model/batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/pool.h"
#include "util/log.h"

/* ------------------------------------------------------------------ layout */

static size_t seq_cache_halves(const model_config *c)
{
    return (size_t)c->n_layers * (size_t)c->context * (size_t)c->d_model;
}

/* Layer L's keys (or values) of sequence I: (n_heads, context, d_head). */
static uint16_t *seq_layer(uint16_t *cache, const model_config *c, int i, int l)
{
    return cache + (size_t)i * seq_cache_halves(c) + (size_t)l * c->context * c->d_model;
}

static int *seq_tokens(const model_batch *b, int i)
{
    return b->tokens + (size_t)i * (size_t)b->home->m->cfg.context;
}

float *model_batch_logits(const model_batch *b, int i)
{
    return b->logits + (size_t)i * (size_t)b->home->m->cfg.vocab_size;
}

const float *model_batch_scores(const model_batch *b, int i, int *n_keys, int *newest)
{
    const model_config *c = &b->home->m->cfg;
    int k = b->item[i];
    if (k < 0)
        return model_state_scores(b->home, n_keys, newest);
    *n_keys = b->n[i];
    *newest = b->home->memory == MODEL_MEMORY_STREAM ? (int)((b->pos[i] - 1) % c->context) : b->n[i] - 1;
    return b->n[i] > 0 ? b->step.scores + (size_t)k * (size_t)c->n_heads * (size_t)c->context : NULL;
}

/* ------------------------------------------------------------------ life */

static int *alloc_ints(size_t n, int *fail)
{
    int *p = calloc(n ? n : 1, sizeof *p);
    *fail |= !p;
    return p;
}

int model_batch_init(model_batch *b, model_state *home, int cap)
{
    memset(b, 0, sizeof *b);
    const model_config *c = &home->m->cfg;
    if (cap < 1 || cap > MODEL_BATCH_MAX) {
        log_error("model: a batch of %d sequences (1..%d)", cap, MODEL_BATCH_MAX);
        return -1;
    }
    b->home = home;
    b->cap = cap;
    size_t B = (size_t)cap, C = (size_t)c->context, V = (size_t)c->vocab_size;
    int fail = 0;
    b->n = alloc_ints(B, &fail);
    b->pos = calloc(B, sizeof *b->pos);
    fail |= !b->pos;
    b->tokens = alloc_ints(B * C, &fail);
    b->seq = alloc_ints(B, &fail);
    b->item = alloc_ints(B, &fail);
    b->forked = alloc_ints(B, &fail);
    b->origin = calloc(B, sizeof *b->origin);
    b->origin_pos = calloc(B, sizeof *b->origin_pos);
    fail |= !b->origin || !b->origin_pos;
    b->k_cache = model_alloc_halves(B * seq_cache_halves(c), &fail);
    b->v_cache = model_alloc_halves(B * seq_cache_halves(c), &fail);
    b->logits = model_alloc_floats(B * V, &fail);
    b->item_logits = model_alloc_floats(B * V, &fail);
    if (!fail && model_step_init(&b->step, c, cap, home->step.threads, b->item_logits) != 0)
        fail = 1;
    if (fail) {
        log_error("%s: out of memory for a batch of %d sequences (context %d)", home->m->file.path, cap, c->context);
        model_batch_free(b);
        return -1;
    }
    return 0;
}

void model_batch_free(model_batch *b)
{
    if (!b)
        return;
    model_step_free(&b->step);
    void *bufs[] = { b->k_cache, b->v_cache, b->logits, b->item_logits };
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        free(bufs[k]);
    int *ints[] = { b->n, b->tokens, b->seq, b->item, b->forked };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        free(ints[k]);
    free(b->pos);
    free(b->origin);
    free(b->origin_pos);
    memset(b, 0, sizeof *b);
}

/* The first N slots of every layer's and head's rows of one cache
 * (n_layers, n_heads, context, d_head) into another: the slots a cache of
 * N events uses (a ring that has wrapped holds context of them). */
static void copy_slots(uint16_t *dst, const uint16_t *src, const model_config *c, int n)
{
    size_t dh = (size_t)c->d_head;
    for (int l = 0; l < c->n_layers; l++)
        for (int h = 0; h < c->n_heads; h++) {
            size_t at = ((size_t)l * c->n_heads + (size_t)h) * c->context * dh;
            memcpy(dst + at, src + at, sizeof *dst * (size_t)n * dh);
        }
}

void model_batch_fork(model_batch *b, int i)
{
    const model_state *s = b->home;
    const model_config *c = &s->m->cfg;
    copy_slots(seq_layer(b->k_cache, c, i, 0), s->k_cache, c, s->n);
    copy_slots(seq_layer(b->v_cache, c, i, 0), s->v_cache, c, s->n);
    memcpy(seq_tokens(b, i), s->tokens, sizeof(int) * (size_t)c->context);
    memcpy(model_batch_logits(b, i), s->logits, sizeof(float) * (size_t)c->vocab_size);
    b->n[i] = s->n;
    b->pos[i] = s->pos;
    b->forked[i] = 1;
    b->item[i] = -1;
    b->origin[i] = s->version;
    b->origin_pos[i] = s->pos;
}

void model_batch_adopt(model_batch *b, int i)
{
    model_state *s = b->home;
    const model_config *c = &s->m->cfg;
    copy_slots(s->k_cache, seq_layer(b->k_cache, c, i, 0), c, b->n[i]);
    copy_slots(s->v_cache, seq_layer(b->v_cache, c, i, 0), c, b->n[i]);
    memcpy(s->tokens, seq_tokens(b, i), sizeof(int) * (size_t)c->context);
    memcpy(s->logits, model_batch_logits(b, i), sizeof(float) * (size_t)c->vocab_size);
    /* the attention behind those logits too: the home's next sample is
     * drawn from them, and a watcher is owed its sources (docs/WATCH.md) */
    int k = b->item[i];
    int stepped = k >= 0 && k < b->step.n && b->seq[k] == i;
    int fresh = stepped || (k < 0 && s->scores_version == b->origin[i]);
    if (stepped)
        memcpy(s->scores, b->step.scores + (size_t)k * (size_t)c->n_heads * (size_t)c->context,
               sizeof(float) * (size_t)c->n_heads * (size_t)c->context);
    s->n = b->n[i];
    s->pos = b->pos[i];
    s->version++;
    if (fresh)
        s->scores_version = s->version;
    for (int k = 0; k < b->cap; k++)        /* the home's rows are no longer the forks' */
        b->forked[k] = 0;
}

/* ------------------------------------------------------------------ room */

/* Window memory, sequence I's cache full: its last `keep` events are
 * prefilled again into its own rows, as model_slide does (the home's
 * scratch and pool do the work; the home's cache is untouched). */
static int slide_sequence(model_batch *b, int i)
{
    model_state *h = b->home;
    const model_config *c = &h->m->cfg;
    int n = b->n[i], keep = h->keep;
    if (n <= keep)
        return 0;
    model_cache rows = { .tokens = seq_tokens(b, i), .k = seq_layer(b->k_cache, c, i, 0),
                         .v = seq_layer(b->v_cache, c, i, 0), .logits = model_batch_logits(b, i) };
    if (model_prefill_into(h, rows, rows.tokens + (n - keep), keep, NULL) != 0)
        return -1;
    b->n[i] = keep;
    b->pos[i] = keep;
    b->forked[i] = 0;       /* its cache is its own now */
    return 0;
}

/* The cache slot of sequence I's next event, as decode_slot's: -1 if a
 * slide fails. */
static int next_slot(model_batch *b, int i)
{
    const model_config *c = &b->home->m->cfg;
    if (b->home->memory == MODEL_MEMORY_STREAM)
        return (int)(b->pos[i] % c->context);
    if (b->n[i] >= c->context && slide_sequence(b, i) != 0)
        return -1;
    return b->n[i];
}

/* ------------------------------------------------------------------ a step */

/* The runs of cache slots (b->step.runs), in slot order, that every item of the
 * step shares with the home it was forked from or holds alone: 0 runs
 * when the items do not all come from one fork of one home version with
 * as many steps since (then each attends over its own cache alone).  The
 * forks write slots origin_pos, origin_pos + 1, ... (mod context); every
 * other slot of theirs is still the home's. */
static int shared_runs(model_batch *b)
{
    model_step *st = &b->step;
    int C = b->home->m->cfg.context, s0 = b->seq[0];
    long long w = b->pos[s0] - b->origin_pos[s0] + 1;   /* slots written, this step's included */
    if (st->n < 2 || w >= C)
        return 0;
    for (int k = 0; k < st->n; k++) {
        int s = b->seq[k];
        if (!b->forked[s] || b->origin[s] != b->origin[s0] || b->pos[s] - b->origin_pos[s] + 1 != w)
            return 0;
    }
    int n_keys = st->n_keys[0], a = (int)(b->origin_pos[s0] % C), e = a + (int)w, nr = 0;
    int all[3][3] = { { 0, a, 1 }, { a, e, 0 }, { e, n_keys, 1 } };
    if (e > C) {
        int wrapped[3][3] = { { 0, e - C, 0 }, { e - C, a, 1 }, { a, C, 0 } };
        memcpy(all, wrapped, sizeof all);
    }
    for (int r = 0; r < 3; r++)
        if (all[r][1] > all[r][0]) {
            st->runs[nr].j0 = all[r][0];
            st->runs[nr].j1 = all[r][1];
            st->runs[nr++].shared = all[r][2];
        }
    return nr;
}

/* The step's items: each sequence's slot (sliding a full window), its
 * event in its cache, its embedding in x.  0, or -1 (logged). */
static int start_items(model_batch *b, const int *seqs, const int *tokens, int n)
{
    const model *m = b->home->m;
    const model_config *c = &m->cfg;
    model_step *st = &b->step;
    if (n < 1 || n > b->cap) {
        log_error("model: a batch step of %d sequences (1..%d)", n, b->cap);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        int s = seqs[k], tok = tokens[k];
        if (s < 0 || s >= b->cap) {
            log_error("model: batch sequence %d (0..%d)", s, b->cap - 1);
            return -1;
        }
        if (tok < 0 || tok >= c->vocab_size)
            tok = 0;        /* as model_decode: never index out of the table */
        int p = next_slot(b, s);
        if (p < 0)
            return -1;
        b->seq[k] = s;
        b->item[s] = k;
        st->k[k] = seq_layer(b->k_cache, c, s, 0);
        st->v[k] = seq_layer(b->v_cache, c, s, 0);
        st->slot[k] = p;
        st->n_keys[k] = b->n[s] < c->context ? b->n[s] + 1 : c->context;
        seq_tokens(b, s)[p] = tok;
        matrix_row(st->x + (size_t)k * c->d_model, &m->w.token_embd, tok);
    }
    st->n = n;
    return 0;
}

int model_batch_decode(model_batch *b, const int *seqs, const int *tokens, int n)
{
    const model_config *c = &b->home->m->cfg;
    if (start_items(b, seqs, tokens, n) != 0)
        return -1;
    b->step.n_runs = shared_runs(b);
    b->shared_steps += b->step.n_runs > 0;
    model_step_run(b->home, &b->step);
    for (int k = 0; k < n; k++) {
        int s = b->seq[k];
        b->n[s] = b->step.n_keys[k];
        b->pos[s]++;
        memcpy(model_batch_logits(b, s), b->item_logits + (size_t)k * c->vocab_size,
               sizeof(float) * (size_t)c->vocab_size);
    }
    return 0;
}
