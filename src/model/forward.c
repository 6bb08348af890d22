/* forward.c: the forward pass: prefill of a whole window (sgemm, skewed relative logits, causal half) into given cache rows, and the layer recipe of a decode step of B sequences (B = 1: model_decode, the live path) with the KV cache (sliding window or rolling ring). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "model/model.h"
#include "util/log.h"

/* Layer L's keys or values in CACHE: (n_heads, context, d_head) half
 * floats, head-major, so one head's keys are contiguous for decode. */
static uint16_t *layer_cache(uint16_t *cache, const model_config *c, int l)
{
    return cache + (size_t)l * c->context * c->d_model;
}

/* ------------------------------------------------------------------ prefill */

/* The prefill's matrix products run on the state's own pool, each thread
 * one sgemm of OpenBLAS's on its rows (OpenBLAS itself single-threaded,
 * model_state_init): OpenBLAS's threads would spin on the same cores
 * after each product, while the pool works, and slow the decodes that
 * follow a prefill (the candidates of an answer) for a good part of a
 * second.  One thread gives the bits of one sgemm over the whole; with
 * more, OpenBLAS rounds some sizes' rows differently (as its own threads
 * did), so results of different thread counts agree to rounding only. */
typedef struct gemm_job {
    int n;
    const float *A;
    const matrix *w;
    float beta;
    float *C;
} gemm_job;

/* Thread I's rows LO..HI-1 of A and C. */
static void gemm_rows(void *ctx, int i, int nt)
{
    const gemm_job *g = ctx;
    int lo, hi, k = g->w->cols, r = g->w->rows;
    pool_split(g->n, i, nt, 16, &lo, &hi);
    if (lo < hi)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, hi - lo, r, k, 1.0f, g->A + (size_t)lo * k, k,
                    g->w->data, k, g->beta, g->C + (size_t)lo * r, r);
}

/* C (n, rows of W) = A (n, cols of W) . W^T + beta C, all row-major; W is
 * one of s->pw's matrices (F32). */
static void gemm_wt(model_state *s, int n, const float *A, const matrix *w, float beta, float *C)
{
    gemm_job g = { .n = n, .A = A, .w = w, .beta = beta, .C = C };
    pool_run(s->pool, gemm_rows, &g);
}

/* A row-parallel step of the prefill over rows 0..n-1, run on the pool. */
typedef struct prefill_rows {
    model_state *s;
    int n;                  /* rows */
    const float *w, *b;     /* the norm's gain and bias, or (w NULL) the bias to add */
} prefill_rows;

/* XB = LayerNorm(X) row by row, gain w, bias b. */
static void rows_norm(void *ctx, int i, int nt)
{
    const prefill_rows *j = ctx;
    const model_config *c = &j->s->m->cfg;
    int d = c->d_model, lo, hi;
    pool_split(j->n, i, nt, 1, &lo, &hi);
    layernorm_rows(j->s->XB + (size_t)lo * d, j->s->X + (size_t)lo * d, (size_t)d, hi - lo, j->w, j->b, d, c->ln_eps);
}

/* H = gelu(H + b) row by row. */
static void rows_bias_gelu(void *ctx, int i, int nt)
{
    const prefill_rows *j = ctx;
    int f = j->s->m->cfg.d_ff, lo, hi;
    pool_split(j->n, i, nt, 1, &lo, &hi);
    for (int r = lo; r < hi; r++) {
        float *h = j->s->H + (size_t)r * f;
        for (int k = 0; k < f; k++)
            h[k] += j->b[k];
        gelu(h, f);
    }
}

/* X += b row by row. */
static void rows_add_bias(void *ctx, int i, int nt)
{
    const prefill_rows *j = ctx;
    int d = j->s->m->cfg.d_model, lo, hi;
    pool_split(j->n, i, nt, 1, &lo, &hi);
    for (int r = lo; r < hi; r++) {
        float *x = j->s->X + (size_t)r * d;
        for (int k = 0; k < d; k++)
            x[k] += j->b[k];
    }
}

/* XB = LayerNorm(X) with gain W and bias B, for N rows. */
static void prefill_norm(model_state *s, int n, const float *w, const float *b)
{
    prefill_rows j = { .s = s, .n = n, .w = w, .b = b };
    pool_run(s->pool, rows_norm, &j);
}

/* The cache holds half floats, head-major, (n_heads, context, d_head) per
 * layer: rows (n, d_model) of SRC into it, rounded, and SRC rounded the
 * same way in place (what the prefill's attention then reads is what a
 * decode step reads from the cache). */
static void scatter_heads(uint16_t *cache, float *src, int n, const model_config *c)
{
    int dh = c->d_head;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < c->n_heads; h++) {
            uint16_t *row = cache + ((size_t)h * c->context + i) * dh;
            float *from = src + (size_t)i * c->d_model + h * dh;
            f32_to_f16_row(row, from, (size_t)dh);
            f16_to_f32_row(from, row, (size_t)dh);
        }
}

/* Q = XB Wq^T; K = XB Wk^T and V = XB Wv^T into a layer's cache KC and VC,
 * slots 0..n-1, and as F32 into KF and VF. */
static void prefill_qkv(model_state *s, uint16_t *kc, uint16_t *vc, const layer_weights *L, int n)
{
    const model_config *c = &s->m->cfg;
    gemm_wt(s, n, s->XB, &L->wq, 0.0f, s->Q);
    gemm_wt(s, n, s->XB, &L->wk, 0.0f, s->KF);
    scatter_heads(kc, s->KF, n, c);
    gemm_wt(s, n, s->XB, &L->wv, 0.0f, s->VF);
    scatter_heads(vc, s->VF, n, c);
}

/* Rows of queries per block of the prefill's attention: a block attends only
 * to the keys up to its last row, so the score matrix is computed (and
 * multiplied by V) about half: n^2/2 + n*PREFILL_BLOCK/2 entries, not n^2. */
#define PREFILL_BLOCK 64

/* One head's attention, a pool job: the query rows in blocks of
 * PREFILL_BLOCK, each thread a run of blocks of about equal cost (a block
 * costs about its last row).  For a block's rows [r0, r1): S = Q_h K_h^T
 * over keys 0..r1-1 and R = Q_h E_h^T over distances 0..min(r1, m)-1
 * (R[i][dist]), what lies right of that never read (rel_softmax_rows masks
 * j > i); the relative softmax of those rows; OUT = S V_h for them.  Every
 * block's products are the same calls whichever thread makes them. */
typedef struct head_job {
    model_state *s;
    const float *qh, *kh, *eh, *vh;
    float *out;             /* (n rows, d_model apart) */
    int n, m;
    float scale;
} head_job;

static void head_blocks(void *ctx, int i, int nt)
{
    const head_job *j = ctx;
    model_state *s = j->s;
    int d = s->m->cfg.d_model, dh = s->m->cfg.d_head, n = j->n, m = j->m;
    int nb = (n + PREFILL_BLOCK - 1) / PREFILL_BLOCK;
    int b0 = (int)(nb * sqrt((double)i / nt)), b1 = i + 1 == nt ? nb : (int)(nb * sqrt((double)(i + 1) / nt));
    for (int b = b0; b < b1; b++) {
        int r0 = b * PREFILL_BLOCK, r1 = r0 + PREFILL_BLOCK < n ? r0 + PREFILL_BLOCK : n, mr = r1 < m ? r1 : m;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1, dh, 1.0f,
                    j->qh + (size_t)r0 * d, d, j->kh, d, 0.0f, s->S + (size_t)r0 * n, n);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, mr, dh, 1.0f,
                    j->qh + (size_t)r0 * d, d, j->eh, dh, 0.0f, s->R + (size_t)r0 * m, m);
        rel_softmax_rows(s->S, s->R, n, m, j->scale, r0, r1);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, dh, r1, 1.0f,
                    s->S + (size_t)r0 * n, n, j->vh, d, 0.0f, j->out + (size_t)r0 * d, d);
    }
}

/* ATT = relative causal self-attention of all n rows, head by head:
 * ATT_h = softmax(mask((Q_h K_h^T + skew(Q_h E_h^T)) / sqrt(d_head))) V_h,
 * K and V the rows of KF and VF (the cache's values, as F32).  SCORES (may
 * be NULL): each head's last row of probabilities, (n_heads, context). */
static void prefill_attention(model_state *s, const layer_weights *L, int n, float *scores)
{
    const model_config *c = &s->m->cfg;
    int dh = c->d_head, M = c->max_rel;
    const float *E = L->er.data;               /* (n_heads, max_rel, dh), F32 */
    head_job j = { .s = s, .n = n, .m = n < M ? n : M, .scale = 1.0f / sqrtf((float)dh) };
    for (int h = 0; h < c->n_heads; h++) {
        j.qh = s->Q + h * dh;
        j.kh = s->KF + h * dh;
        j.eh = E + (size_t)h * M * dh;
        j.vh = s->VF + h * dh;
        j.out = s->ATT + h * dh;
        pool_run(s->pool, head_blocks, &j);
        if (scores)
            memcpy(scores + (size_t)h * c->context, s->S + (size_t)(n - 1) * n, sizeof(float) * (size_t)n);
    }
}

/* H = gelu(H + b_up); then, after the down projection, X += b_down. */
static void prefill_bias_gelu(model_state *s, const float *b, int n)
{
    prefill_rows j = { .s = s, .n = n, .b = b };
    pool_run(s->pool, rows_bias_gelu, &j);
}

static void prefill_add_bias(model_state *s, const float *b, int n)
{
    prefill_rows j = { .s = s, .n = n, .b = b };
    pool_run(s->pool, rows_add_bias, &j);
}

/* The logits after the last layer: all N rows into ALL_LOGITS (and the last
 * row into LOGITS), or, when ALL_LOGITS is NULL, the last row alone. */
static void prefill_logits(model_state *s, int n, float *logits, float *all_logits)
{
    const model *m = s->m;
    const model_config *c = &m->cfg;
    int d = c->d_model;
    if (all_logits) {
        prefill_norm(s, n, m->w.out_norm_w, m->w.out_norm_b);
        gemm_wt(s, n, s->XB, &s->pw.token_embd, 0.0f, all_logits);
        memcpy(logits, all_logits + (size_t)(n - 1) * c->vocab_size, sizeof(float) * (size_t)c->vocab_size);
    } else {
        float *xb = s->step.xb;
        layernorm(xb, s->X + (size_t)(n - 1) * d, m->w.out_norm_w, m->w.out_norm_b, d, c->ln_eps);
        matvec(logits, &m->w.token_embd, xb, 0, c->vocab_size);
    }
}

/* 0 when N events fit the window and every id is in the vocabulary; else logs and -1. */
static int check_prefill(const model_config *c, const int *tokens, int n)
{
    if (n < 1 || n > c->context) {
        log_error("model: prefill of %d events, the model's window holds 1..%d", n, c->context);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size) {
            log_error("model: event id %d at position %d is outside the vocabulary (0..%d)", tokens[i], i,
                      c->vocab_size - 1);
            return -1;
        }
    return 0;
}

int model_prefill_into(model_state *s, model_cache dst, const int *tokens, int n, float *all_logits)
{
    const model *m = s->m;
    const model_config *c = &m->cfg;
    int d = c->d_model;
    if (check_prefill(c, tokens, n) != 0)
        return -1;
    memmove(dst.tokens, tokens, sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)                               /* X = the events' embeddings */
        matrix_row(s->X + (size_t)i * d, &m->w.token_embd, dst.tokens[i]);
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = &s->pw.layers[l];
        uint16_t *kc = layer_cache(dst.k, c, l), *vc = layer_cache(dst.v, c, l);
        prefill_norm(s, n, L->attn_norm_w, L->attn_norm_b);   /* XB = LN1(X) */
        prefill_qkv(s, kc, vc, L, n);                         /* Q, K, V = XB Wq^T, XB Wk^T, XB Wv^T */
        prefill_attention(s, L, n, l + 1 == c->n_layers ? dst.scores : NULL);  /* ATT = relative causal attention */
        gemm_wt(s, n, s->ATT, &L->wo, 1.0f, s->X);            /* X += ATT Wo^T */
        prefill_norm(s, n, L->ffn_norm_w, L->ffn_norm_b);     /* XB = LN2(X) */
        gemm_wt(s, n, s->XB, &L->w_up, 0.0f, s->H);           /* H = XB W1^T */
        prefill_bias_gelu(s, L->b_up, n);                     /* H = gelu(H + b1) */
        gemm_wt(s, n, s->H, &L->w_down, 1.0f, s->X);          /* X += H W2^T */
        prefill_add_bias(s, L->b_down, n);                    /* X += b2 */
    }
    prefill_logits(s, n, dst.logits, all_logits);            /* logits = LN_f(X) E^T */
    return 0;
}

int model_prefill(model_state *s, const int *tokens, int n, float *all_logits)
{
    model_cache own = { .tokens = s->tokens, .k = s->k_cache, .v = s->v_cache, .logits = s->logits,
                        .scores = s->scores };
    if (model_prefill_into(s, own, tokens, n, all_logits) != 0)
        return -1;
    s->n = n;
    s->pos = n;
    s->scores_version = ++s->version;     /* the attention of the logits' row */
    return 0;
}

/* ------------------------------------------------------------------ a step */

/* A step of st->n items, one pool job (step_layers): each stage splits
 * its matrix's rows (or the heads) among the threads, every item at once,
 * so a weight row is read (and converted from F16) once for all of them;
 * with one item each product is matvec's. */
typedef struct step_job {
    const model *m;
    model_step *st;
    pool *pool;
    const layer_weights *L;     /* this layer's weights */
    int l;
} step_job;

/* Head H's rows of q = Wq xb for items A..B-1; its rows of k and v into
 * each one's cache at its slot (head-major: one run of d_head floats). */
static void qkv_rows(const step_job *j, const float *xb, int h, int a, int b)
{
    const model_config *c = &j->m->cfg;
    model_step *st = j->st;
    const layer_weights *L = j->L;
    int dh = c->d_head, lo = h * dh, hi = lo + dh;
    size_t d = (size_t)c->d_model, at = (size_t)a * d;
    matmat(st->q + at + lo, d, &L->wq, xb + at, d, b - a, lo, hi);
    matmat(st->kn + at + lo, d, &L->wk, xb + at, d, b - a, lo, hi);
    matmat(st->vn + at + lo, d, &L->wv, xb + at, d, b - a, lo, hi);
    for (int k = a; k < b; k++) {
        size_t slot = ((size_t)h * c->context + (size_t)st->slot[k]) * (size_t)dh;
        f32_to_f16_row(layer_cache(st->k[k], c, j->l) + slot, st->kn + k * d + (size_t)lo, (size_t)dh);
        f32_to_f16_row(layer_cache(st->v[k], c, j->l) + slot, st->vn + k * d + (size_t)lo, (size_t)dh);
    }
}

/* Head H of items A..B-1 of a step whose items share st->runs: each shared
 * row of keys and values is read from memory once for all of them (item
 * A's copy; every fork's is the same: the kernels take a block of rows for
 * every query before the next block), each item's own rows from its own
 * cache; the sums run over the slots in order, so each item gets
 * attend_rel's bits. */
static void attend_shared(const step_job *j, int h, int a, int b, float scale)
{
    const model_config *c = &j->m->cfg;
    model_step *st = j->st;
    int dh = c->d_head, H = c->n_heads, d = c->d_model, M = c->max_rel, C = c->context, n = b - a;
    int n_keys = st->n_keys[a], newest = st->slot[a];
    size_t at = (size_t)h * C * dh, lds = (size_t)H * C;
    const uint16_t *ka = layer_cache(st->k[a], c, j->l) + at, *va = layer_cache(st->v[a], c, j->l) + at;
    float *q = st->q + (size_t)a * d + h * dh, *att = st->att + (size_t)a * d + h * dh;
    float *scores = st->scores + (size_t)a * lds + (size_t)h * C;
    for (int r = 0; r < st->n_runs; r++) {
        int j0 = st->runs[r].j0, j1 = st->runs[r].j1;
        if (st->runs[r].shared)
            attend_scores(scores, q, (size_t)d, lds, n, ka, dh, dh, j0, j1);
        else
            for (int k = 0; k < n; k++)
                attend_scores(scores + k * lds, q + (size_t)k * d, 0, 0, 1,
                              layer_cache(st->k[a + k], c, j->l) + at, dh, dh, j0, j1);
    }
    for (int k = 0; k < n; k++) {
        attend_softmax(scores + k * lds, n_keys, newest, st->rel + ((size_t)(a + k) * H + (size_t)h) * M, M, scale);
        memset(att + (size_t)k * d, 0, sizeof(float) * (size_t)dh);
    }
    for (int r = 0; r < st->n_runs; r++) {
        int j0 = st->runs[r].j0, j1 = st->runs[r].j1;
        if (st->runs[r].shared)
            attend_values_n(att, (size_t)d, va, dh, scores, lds, n, j0, j1, dh);
        else
            for (int k = 0; k < n; k++)
                attend_values(att + (size_t)k * d, layer_cache(st->v[a + k], c, j->l) + at, dh, scores + k * lds,
                              j0, j1, dh);
    }
}

/* Head H of items A..B-1 (a head's projections and its attention need no
 * other head's): q, k and v of the head's rows, q . E for the items'
 * queries in one matmat over the head's table, then the items' attention:
 * over the rows they share read once for all (attend_shared), else each
 * over its own cache:
 * att_h = softmax((q_h K_h^T + q_h E_h^T skewed to the ring) / sqrt(d_head)) V_h. */
static void head_items(const step_job *j, const float *xb, int h, int a, int b, int m)
{
    model_step *st = j->st;
    const model_config *c = &j->m->cfg;
    const layer_weights *L = j->L;
    int dh = c->d_head, M = c->max_rel, H = c->n_heads, d = c->d_model;
    size_t esize = L->er.type == GGML_TYPE_F16 ? 2 : 4;
    float scale = 1.0f / sqrtf((float)dh);
    qkv_rows(j, xb, h, a, b);
    matrix er = { (const char *)L->er.data + (size_t)h * M * dh * esize, L->er.type, M, dh, NULL };
    matmat(st->rel + ((size_t)a * H + (size_t)h) * M, (size_t)H * M, &er, st->q + (size_t)a * d + h * dh, (size_t)d,
           b - a, 0, m);
    if (st->n_runs > 0) {
        attend_shared(j, h, a, b, scale);
        return;
    }
    size_t at = (size_t)h * c->context * dh;
    for (int k = a; k < b; k++) {
        const uint16_t *kc = layer_cache(st->k[k], c, j->l), *vc = layer_cache(st->v[k], c, j->l);
        size_t row = (size_t)k * H + (size_t)h;
        attend_rel(st->att + (size_t)k * d + h * dh, st->q + (size_t)k * d + h * dh, kc + at, vc + at, dh,
                   st->n_keys[k], st->slot[k], st->rel + row * M, M, dh, scale, st->scores + row * c->context);
    }
}

/* Thread I's share of the heads stage: the (head, item) pairs, head by
 * head, split evenly among the threads, so that 5 heads of 8 candidates
 * are 20 pairs a thread, not 3 heads against 2 (one sequence still splits
 * its 5 heads 3 and 2).  Every pair's arithmetic is the same whichever
 * thread and whichever neighbours it has, so the bits are one thread's. */
static void step_heads(const step_job *j, const float *xb, int i, int nt)
{
    model_step *st = j->st;
    const model_config *c = &j->m->cfg;
    int M = c->max_rel, n = st->n, m = 0, u0, u1;
    for (int k = 0; k < n; k++) {           /* the rows of E any item reads */
        int mk = st->n_keys[k] < M ? st->n_keys[k] : M;
        m = mk > m ? mk : m;
    }
    pool_split(c->n_heads * n, i, nt, 1, &u0, &u1);
    for (int u = u0; u < u1;) {
        int h = u / n, a = u % n, b = (h + 1) * n <= u1 ? n : u1 - h * n;
        head_items(j, xb, h, a, b, m);
        u = h * n + b;
    }
}

/* x += Wo att for every item, thread I's rows: the output projection and
 * the residual (the thread's xb is scratch). */
static void step_out_residual(const step_job *j, float *xb, int i, int nt)
{
    model_step *st = j->st;
    size_t d = (size_t)j->m->cfg.d_model;
    int lo, hi;
    pool_split((int)d, i, nt, 16, &lo, &hi);
    matmat(xb + lo, d, &j->L->wo, st->att, d, st->n, lo, hi);
    for (int k = 0; k < st->n; k++)
        for (int r = lo; r < hi; r++)
            st->x[k * d + (size_t)r] += xb[k * d + (size_t)r];
}

/* hb = gelu(W1 xb + b1) for every item, thread I's rows. */
static void step_ffn_up(const step_job *j, const float *xb, int i, int nt)
{
    model_step *st = j->st;
    const model_config *c = &j->m->cfg;
    size_t f = (size_t)c->d_ff;
    int lo, hi;
    pool_split(c->d_ff, i, nt, 16, &lo, &hi);
    matmat(st->hb + lo, f, &j->L->w_up, xb, (size_t)c->d_model, st->n, lo, hi);
    for (int k = 0; k < st->n; k++) {
        float *h = st->hb + k * f;
        for (int r = lo; r < hi; r++)
            h[r] += j->L->b_up[r];
        gelu(h + lo, hi - lo);
    }
}

/* x += W2 hb + b2 for every item, thread I's rows: the down projection and
 * the residual (the thread's xb is scratch). */
static void step_ffn_down_residual(const step_job *j, float *xb, int i, int nt)
{
    model_step *st = j->st;
    const model_config *c = &j->m->cfg;
    size_t d = (size_t)c->d_model;
    int lo, hi;
    pool_split(c->d_model, i, nt, 16, &lo, &hi);
    matmat(xb + lo, d, &j->L->w_down, st->hb, (size_t)c->d_ff, st->n, lo, hi);
    for (int k = 0; k < st->n; k++)
        for (int r = lo; r < hi; r++)
            st->x[k * d + (size_t)r] += xb[k * d + (size_t)r] + j->L->b_down[r];
}

/* logits = E xb for every item, thread I's rows (the output projection is
 * the embedding, tied). */
static void step_logits(const step_job *j, const float *xb, int i, int nt)
{
    const model *m = j->m;
    int lo, hi;
    pool_split(m->cfg.vocab_size, i, nt, 16, &lo, &hi);
    matmat(j->st->logits + lo, (size_t)m->cfg.vocab_size, &m->w.token_embd, xb, (size_t)m->cfg.d_model, j->st->n,
           lo, hi);
}

/* XB = LayerNorm(x) with gain G and bias B, item by item. */
static void step_norm(const model_config *c, const model_step *st, float *xb, const float *g, const float *b)
{
    layernorm_rows(xb, st->x, (size_t)c->d_model, st->n, g, b, c->d_model, c->ln_eps);
}

/* The whole step, one pool job: thread I of NT does its share of each
 * stage and waits for the others (pool_barrier) where the next stage reads
 * what they wrote; each thread normalizes x into its own rows of xb (the
 * same bits on every thread), so no thread waits while one normalizes. */
static void step_layers(void *ctx, int i, int nt)
{
    step_job j = *(const step_job *)ctx;
    const model *m = j.m;
    const model_config *c = &m->cfg;
    model_step *st = j.st;
    float *xb = st->xb + (size_t)i * (size_t)st->cap * (size_t)c->d_model;
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = j.L = &m->w.layers[l];
        j.l = l;
        step_norm(c, st, xb, L->attn_norm_w, L->attn_norm_b);   /* xb = LN1(x) */
        step_heads(&j, xb, i, nt);                              /* q, k[slot], v[slot]; att = attention */
        pool_barrier(j.pool);
        step_out_residual(&j, xb, i, nt);                       /* x += Wo att */
        pool_barrier(j.pool);
        step_norm(c, st, xb, L->ffn_norm_w, L->ffn_norm_b);     /* xb = LN2(x) */
        step_ffn_up(&j, xb, i, nt);                             /* hb = gelu(W1 xb + b1) */
        pool_barrier(j.pool);
        step_ffn_down_residual(&j, xb, i, nt);                  /* x += W2 hb + b2 */
        pool_barrier(j.pool);
    }
    step_norm(c, st, xb, m->w.out_norm_w, m->w.out_norm_b);     /* xb = LN_f(x) */
    step_logits(&j, xb, i, nt);                                 /* logits = E xb */
}

void model_step_run(model_state *s, model_step *st)
{
    step_job j = { .m = s->m, .st = st, .pool = s->pool };
    pool_run_staged(s->pool, step_layers, &j);
}

/* ------------------------------------------------------------------ decode */

int model_slide(model_state *s)
{
    if (s->memory == MODEL_MEMORY_STREAM || s->n <= s->keep)
        return 0;
    /* No absolute positions: re-running the last KEEP events gives exactly
     * the state a fresh run on that window has. */
    if (model_prefill(s, s->tokens + (s->n - s->keep), s->keep, NULL) != 0)
        return -1;
    s->n_slides++;
    return 0;
}

/* The cache slot of the next event: in stream memory the ring's next slot
 * (once full, the oldest event's); in window memory the next free one, after
 * sliding a full window. -1 if the slide fails. */
static int decode_slot(model_state *s)
{
    const model_config *c = &s->m->cfg;
    if (s->memory == MODEL_MEMORY_STREAM)
        return (int)(s->pos % c->context);
    if (s->n >= c->context && model_slide(s) != 0)
        return -1;
    return s->n;
}

const float *model_state_scores(const model_state *s, int *n_keys, int *newest)
{
    *n_keys = s->n;
    *newest = s->memory == MODEL_MEMORY_STREAM ? (int)((s->pos - 1) % s->m->cfg.context) : s->n - 1;
    return s->n > 0 && s->scores_version == s->version ? s->scores : NULL;
}

/* A step of one: the state's own cache, its logits. */
const float *model_decode(model_state *s, int token)
{
    const model *m = s->m;
    const model_config *c = &m->cfg;
    model_step *st = &s->step;
    if (token < 0 || token >= c->vocab_size)
        token = 0;          /* callers pass sampled ids; never index out of the table */
    int p = decode_slot(s);
    if (p < 0)
        return NULL;
    int n_keys = s->n < c->context ? s->n + 1 : c->context;
    s->tokens[p] = token;
    matrix_row(st->x, &m->w.token_embd, token);             /* x = the event's embedding */
    st->n = 1;
    st->k[0] = s->k_cache;
    st->v[0] = s->v_cache;
    st->slot[0] = p;
    st->n_keys[0] = n_keys;
    st->n_runs = 0;
    model_step_run(s, st);
    s->n = n_keys;
    s->pos++;
    s->scores_version = ++s->version;
    return s->logits;
}
