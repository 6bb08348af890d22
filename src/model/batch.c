/* batch.c: several sequences decoded together: matmat over the weights, attention per sequence, each one's bits those of model_decode. */
#include "model/batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/pool.h"
#include "util/log.h"

/* ------------------------------------------------------------------ layout */

static size_t seq_cache_floats(const model_config *c)
{
    return (size_t)c->n_layers * (size_t)c->context * (size_t)c->d_model;
}

/* Layer L's keys (or values) of sequence I: (n_heads, context, d_head). */
static float *seq_layer(float *cache, const model_config *c, int i, int l)
{
    return cache + (size_t)i * seq_cache_floats(c) + (size_t)l * c->context * c->d_model;
}

static int *seq_tokens(const model_batch *b, int i)
{
    return b->tokens + (size_t)i * (size_t)b->home->m->cfg.context;
}

float *model_batch_logits(const model_batch *b, int i)
{
    return b->logits + (size_t)i * (size_t)b->home->m->cfg.vocab_size;
}

/* ------------------------------------------------------------------ life */

static float *alloc_floats(size_t n, int *fail)
{
    float *p = NULL;
    if (posix_memalign((void **)&p, 64, (n ? n : 1) * sizeof(float)) != 0) {
        *fail = 1;
        return NULL;
    }
    memset(p, 0, (n ? n : 1) * sizeof(float));
    return p;
}

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
    size_t B = (size_t)cap, d = (size_t)c->d_model, C = (size_t)c->context, V = (size_t)c->vocab_size;
    size_t H = (size_t)c->n_heads;
    int fail = 0;
    b->n = alloc_ints(B, &fail);
    b->pos = calloc(B, sizeof *b->pos);
    fail |= !b->pos;
    b->tokens = alloc_ints(B * C, &fail);
    b->seq = alloc_ints(B, &fail);
    b->slot = alloc_ints(B, &fail);
    b->n_keys = alloc_ints(B, &fail);
    b->forked = alloc_ints(B, &fail);
    b->origin = calloc(B, sizeof *b->origin);
    b->origin_pos = calloc(B, sizeof *b->origin_pos);
    fail |= !b->origin || !b->origin_pos;
    b->k_cache = alloc_floats(B * seq_cache_floats(c), &fail);
    b->v_cache = alloc_floats(B * seq_cache_floats(c), &fail);
    b->logits = alloc_floats(B * V, &fail);
    b->item_logits = alloc_floats(B * V, &fail);
    float **rows[] = { &b->x, &b->xb, &b->q, &b->kn, &b->vn, &b->att };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++)
        *rows[k] = alloc_floats(B * d, &fail);
    b->hb = alloc_floats(B * (size_t)c->d_ff, &fail);
    b->scores = alloc_floats(B * H * C, &fail);
    b->rel = alloc_floats(B * H * (size_t)c->max_rel, &fail);
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
    float *bufs[] = { b->k_cache, b->v_cache, b->logits, b->item_logits, b->x, b->xb, b->q, b->kn, b->vn, b->att,
                      b->hb, b->scores, b->rel };
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        free(bufs[k]);
    int *ints[] = { b->n, b->tokens, b->seq, b->slot, b->n_keys, b->forked };
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
static void copy_slots(float *dst, const float *src, const model_config *c, int n)
{
    size_t dh = (size_t)c->d_head;
    for (int l = 0; l < c->n_layers; l++)
        for (int h = 0; h < c->n_heads; h++) {
            size_t at = ((size_t)l * c->n_heads + (size_t)h) * c->context * dh;
            memcpy(dst + at, src + at, sizeof(float) * (size_t)n * dh);
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
    s->n = b->n[i];
    s->pos = b->pos[i];
    s->version++;
    for (int k = 0; k < b->cap; k++)        /* the home's rows are no longer the forks' */
        b->forked[k] = 0;
}

/* ------------------------------------------------------------------ room */

/* Window memory, sequence I's cache full: its last `keep` events are
 * prefilled again, as model_slide does, with the home's prefill buffers
 * pointed at I's cache for the while (the home's own state is untouched). */
static int slide_sequence(model_batch *b, int i)
{
    model_state *h = b->home;
    model_state saved = *h;
    const model_config *c = &h->m->cfg;
    int n = b->n[i], keep = h->keep;
    if (n <= keep)
        return 0;
    h->k_cache = seq_layer(b->k_cache, c, i, 0);
    h->v_cache = seq_layer(b->v_cache, c, i, 0);
    h->tokens = seq_tokens(b, i);
    h->logits = model_batch_logits(b, i);
    int rc = model_prefill(h, h->tokens + (n - keep), keep, NULL);
    b->n[i] = h->n;
    b->pos[i] = h->pos;
    b->forked[i] = 0;       /* its cache is its own now */
    *h = saved;
    return rc;
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

/* One layer of one step, handed to the pool; each job splits its matrix's
 * rows (or the heads) among the threads, every item at once. */
typedef struct batch_job {
    model_batch *b;
    const layer_weights *L;
    int l;
} batch_job;

/* q = Wq xb for every item, rows LO..HI-1; k and v into each item's cache
 * at its slot. */
static void qkv_rows(model_batch *b, const layer_weights *L, int l, int lo, int hi)
{
    const model_config *c = &b->home->m->cfg;
    size_t d = (size_t)c->d_model, dh = (size_t)c->d_head;
    int n = b->n_items;
    matmat(b->q + lo, d, &L->wq, b->xb, d, n, lo, hi);
    matmat(b->kn + lo, d, &L->wk, b->xb, d, n, lo, hi);
    matmat(b->vn + lo, d, &L->wv, b->xb, d, n, lo, hi);
    for (int k = 0; k < n; k++) {
        float *kc = seq_layer(b->k_cache, c, b->seq[k], l), *vc = seq_layer(b->v_cache, c, b->seq[k], l);
        for (int a = lo; a < hi;) {     /* rows of one head at a time: head-major cache */
            int h = a / (int)dh, e = (h + 1) * (int)dh < hi ? (h + 1) * (int)dh : hi;
            size_t at = ((size_t)h * c->context + (size_t)b->slot[k]) * dh + (size_t)(a - h * (int)dh);
            memcpy(kc + at, b->kn + k * d + (size_t)a, sizeof(float) * (size_t)(e - a));
            memcpy(vc + at, b->vn + k * d + (size_t)a, sizeof(float) * (size_t)(e - a));
            a = e;
        }
    }
}

/* The runs of cache slots (b->runs), in slot order, that every item of the
 * step shares with the home it was forked from or holds alone: 0 runs
 * when the items do not all come from one fork of one home version with
 * as many steps since (then each attends over its own cache alone).  The
 * forks write slots origin_pos, origin_pos + 1, ... (mod context); every
 * other slot of theirs is still the home's. */
static int shared_runs(model_batch *b)
{
    int C = b->home->m->cfg.context, s0 = b->seq[0];
    long long w = b->pos[s0] - b->origin_pos[s0] + 1;   /* slots written, this step's included */
    if (b->n_items < 2 || w >= C)
        return 0;
    for (int k = 0; k < b->n_items; k++) {
        int s = b->seq[k];
        if (!b->forked[s] || b->origin[s] != b->origin[s0] || b->pos[s] - b->origin_pos[s] + 1 != w)
            return 0;
    }
    int n_keys = b->n_keys[0], a = (int)(b->origin_pos[s0] % C), e = a + (int)w, nr = 0;
    int all[3][3] = { { 0, a, 1 }, { a, e, 0 }, { e, n_keys, 1 } };
    if (e > C) {
        int wrapped[3][3] = { { 0, e - C, 0 }, { e - C, a, 1 }, { a, C, 0 } };
        memcpy(all, wrapped, sizeof all);
    }
    for (int r = 0; r < 3; r++)
        if (all[r][1] > all[r][0]) {
            b->runs[nr].j0 = all[r][0];
            b->runs[nr].j1 = all[r][1];
            b->runs[nr++].shared = all[r][2];
        }
    return nr;
}

/* Head H of a step whose items share RUNS: each shared row of keys and
 * values is read from memory once for all the items (item 0's copy; every
 * fork's is the same: the kernels take a block of rows for every query
 * before the next block), each item's own rows from its own cache; the
 * sums run over the slots in order, so each item gets attend_rel's bits. */
static void attend_shared(model_batch *b, int l, int h, float scale)
{
    int nr = b->n_runs;
    const model_config *c = &b->home->m->cfg;
    int dh = c->d_head, H = c->n_heads, d = c->d_model, M = c->max_rel, C = c->context, n = b->n_items;
    int n_keys = b->n_keys[0], newest = b->slot[0];
    size_t at = (size_t)h * C * dh, lds = (size_t)H * C;
    const float *k0 = seq_layer(b->k_cache, c, b->seq[0], l) + at, *v0 = seq_layer(b->v_cache, c, b->seq[0], l) + at;
    float *q = b->q + h * dh, *att = b->att + h * dh, *scores = b->scores + (size_t)h * C;
    for (int r = 0; r < nr; r++) {
        int j0 = b->runs[r].j0, j1 = b->runs[r].j1;
        if (b->runs[r].shared)
            attend_scores(scores, q, (size_t)d, lds, n, k0, dh, dh, j0, j1);
        else
            for (int k = 0; k < n; k++)
                attend_scores(scores + k * lds, q + (size_t)k * d, 0, 0, 1,
                              seq_layer(b->k_cache, c, b->seq[k], l) + at, dh, dh, j0, j1);
    }
    for (int k = 0; k < n; k++) {
        attend_softmax(scores + k * lds, n_keys, newest, b->rel + ((size_t)k * H + (size_t)h) * M, M, scale);
        memset(att + (size_t)k * d, 0, sizeof(float) * (size_t)dh);
    }
    for (int r = 0; r < nr; r++) {
        int j0 = b->runs[r].j0, j1 = b->runs[r].j1;
        if (b->runs[r].shared)
            attend_values_n(att, (size_t)d, v0, dh, scores, lds, n, j0, j1, dh);
        else
            for (int k = 0; k < n; k++)
                attend_values(att + (size_t)k * d, seq_layer(b->v_cache, c, b->seq[k], l) + at, dh, scores + k * lds,
                              j0, j1, dh);
    }
}

/* Heads LO..HI-1 of a layer, one pool job (a head's projections and its
 * attention need no other head's, so no thread waits between them): q, k
 * and v of the heads' rows, q . E for every item's query in one matmat over
 * each head's table, then the items' attention: over the rows they share
 * with their home read once for all (attend_shared), else each over its
 * own cache. */
static void batch_heads(void *ctx, int i, int nt)
{
    const batch_job *j = ctx;
    model_batch *b = j->b;
    const model_config *c = &b->home->m->cfg;
    const layer_weights *L = j->L;
    int dh = c->d_head, M = c->max_rel, H = c->n_heads, d = c->d_model, lo, hi, m = 0;
    size_t esize = L->er.type == GGML_TYPE_F16 ? 2 : 4;
    float scale = 1.0f / sqrtf((float)dh);
    for (int k = 0; k < b->n_items; k++) {      /* the rows of E any item reads */
        int mk = b->n_keys[k] < M ? b->n_keys[k] : M;
        m = mk > m ? mk : m;
    }
    pool_split(H, i, nt, 1, &lo, &hi);
    if (lo < hi)
        qkv_rows(b, L, j->l, lo * dh, hi * dh);
    for (int h = lo; h < hi; h++) {
        matrix er = { (const char *)L->er.data + (size_t)h * M * dh * esize, L->er.type, M, dh };
        matmat(b->rel + (size_t)h * M, (size_t)H * M, &er, b->q + h * dh, (size_t)d, b->n_items, 0, m);
        if (b->n_runs > 0) {
            attend_shared(b, j->l, h, scale);
            continue;
        }
        size_t at = (size_t)h * c->context * dh;
        for (int k = 0; k < b->n_items; k++) {
            const float *kc = seq_layer(b->k_cache, c, b->seq[k], j->l), *vc = seq_layer(b->v_cache, c, b->seq[k], j->l);
            size_t row = (size_t)k * H + (size_t)h;
            attend_rel(b->att + (size_t)k * d + h * dh, b->q + (size_t)k * d + h * dh, kc + at, vc + at, dh,
                       b->n_keys[k], b->slot[k], b->rel + row * M, M, dh, scale, b->scores + row * c->context);
        }
    }
}

/* x += Wo att for every item. */
static void batch_out_residual(void *ctx, int i, int nt)
{
    const batch_job *j = ctx;
    model_batch *b = j->b;
    size_t d = (size_t)b->home->m->cfg.d_model;
    int lo, hi;
    pool_split((int)d, i, nt, 16, &lo, &hi);
    matmat(b->xb + lo, d, &j->L->wo, b->att, d, b->n_items, lo, hi);
    for (int k = 0; k < b->n_items; k++)
        for (int r = lo; r < hi; r++)
            b->x[k * d + (size_t)r] += b->xb[k * d + (size_t)r];
}

/* hb = gelu(W1 xb + b1) for every item. */
static void batch_ffn_up(void *ctx, int i, int nt)
{
    const batch_job *j = ctx;
    model_batch *b = j->b;
    const model_config *c = &b->home->m->cfg;
    size_t f = (size_t)c->d_ff;
    int lo, hi;
    pool_split(c->d_ff, i, nt, 16, &lo, &hi);
    matmat(b->hb + lo, f, &j->L->w_up, b->xb, (size_t)c->d_model, b->n_items, lo, hi);
    for (int k = 0; k < b->n_items; k++) {
        float *h = b->hb + k * f;
        for (int r = lo; r < hi; r++)
            h[r] += j->L->b_up[r];
        gelu(h + lo, hi - lo);
    }
}

/* x += W2 hb + b2 for every item (q is scratch). */
static void batch_ffn_down_residual(void *ctx, int i, int nt)
{
    const batch_job *j = ctx;
    model_batch *b = j->b;
    const model_config *c = &b->home->m->cfg;
    size_t d = (size_t)c->d_model;
    int lo, hi;
    pool_split(c->d_model, i, nt, 16, &lo, &hi);
    matmat(b->q + lo, d, &j->L->w_down, b->hb, (size_t)c->d_ff, b->n_items, lo, hi);
    for (int k = 0; k < b->n_items; k++)
        for (int r = lo; r < hi; r++)
            b->x[k * d + (size_t)r] += b->q[k * d + (size_t)r] + j->L->b_down[r];
}

/* logits = E xb for every item (tied output). */
static void batch_logits(void *ctx, int i, int nt)
{
    const batch_job *j = ctx;
    model_batch *b = j->b;
    const model *m = b->home->m;
    int lo, hi;
    pool_split(m->cfg.vocab_size, i, nt, 16, &lo, &hi);
    matmat(b->item_logits + lo, (size_t)m->cfg.vocab_size, &m->w.token_embd, b->xb, (size_t)m->cfg.d_model,
           b->n_items, lo, hi);
}

/* xb = LayerNorm(x) with gain G and bias BIAS, item by item. */
static void batch_norm(model_batch *b, const float *g, const float *bias)
{
    const model_config *c = &b->home->m->cfg;
    size_t d = (size_t)c->d_model;
    layernorm_rows(b->xb, b->x, d, b->n_items, g, bias, c->d_model, c->ln_eps);
}

/* The step's items: each sequence's slot (sliding a full window), its
 * event in its cache, its embedding in x.  0, or -1 (logged). */
static int start_items(model_batch *b, const int *seqs, const int *tokens, int n)
{
    const model *m = b->home->m;
    const model_config *c = &m->cfg;
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
        b->slot[k] = p;
        b->n_keys[k] = b->n[s] < c->context ? b->n[s] + 1 : c->context;
        seq_tokens(b, s)[p] = tok;
        matrix_row(b->x + (size_t)k * c->d_model, &m->w.token_embd, tok);
    }
    b->n_items = n;
    return 0;
}

int model_batch_decode(model_batch *b, const int *seqs, const int *tokens, int n)
{
    const model *m = b->home->m;
    const model_config *c = &m->cfg;
    pool *p = b->home->pool;
    if (start_items(b, seqs, tokens, n) != 0)
        return -1;
    b->n_runs = shared_runs(b);
    b->shared_steps += b->n_runs > 0;
    batch_job j = { .b = b };
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = j.L = &m->w.layers[l];
        j.l = l;
        batch_norm(b, L->attn_norm_w, L->attn_norm_b);      /* xb = LN1(x) */
        pool_run(p, batch_heads, &j);                       /* q, k[slot], v[slot]; att = relative attention */
        pool_run(p, batch_out_residual, &j);                /* x += Wo att */
        batch_norm(b, L->ffn_norm_w, L->ffn_norm_b);        /* xb = LN2(x) */
        pool_run(p, batch_ffn_up, &j);                      /* hb = gelu(W1 xb + b1) */
        pool_run(p, batch_ffn_down_residual, &j);           /* x += W2 hb + b2 */
    }
    batch_norm(b, m->w.out_norm_w, m->w.out_norm_b);        /* xb = LN_f(x) */
    pool_run(p, batch_logits, &j);                          /* logits = E xb */
    for (int k = 0; k < n; k++) {
        int s = b->seq[k];
        b->n[s] = b->n_keys[k];
        b->pos[s]++;
        memcpy(model_batch_logits(b, s), b->item_logits + (size_t)k * c->vocab_size,
               sizeof(float) * (size_t)c->vocab_size);
    }
    return 0;
}
