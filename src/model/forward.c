/* forward.c: the forward pass: prefill of a whole window (sgemm, skewed relative logits, causal half) and one-event decode with the KV cache (sliding window or rolling ring). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "model/model.h"
#include "util/log.h"

/* Layer L's keys or values in CACHE: (n_heads, context, d_head), head-major,
 * so one head's keys are contiguous for decode. */
static float *layer_cache(float *cache, const model_config *c, int l)
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

/* The cache is head-major, (n_heads, context, d_head) per layer: copies rows
 * (n, d_model) of SRC into it. */
static void scatter_heads(float *cache, const float *src, int n, const model_config *c)
{
    int dh = c->d_head;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < c->n_heads; h++)
            memcpy(cache + ((size_t)h * c->context + i) * dh, src + (size_t)i * c->d_model + h * dh,
                   sizeof(float) * (size_t)dh);
}

/* Q = XB Wq^T; K = XB Wk^T and V = XB Wv^T into layer L's cache, slots 0..n-1. */
static void prefill_qkv(model_state *s, int l, const layer_weights *L, int n)
{
    const model_config *c = &s->m->cfg;
    gemm_wt(s, n, s->XB, &L->wq, 0.0f, s->Q);
    gemm_wt(s, n, s->XB, &L->wk, 0.0f, s->ATT);         /* ATT: scratch until attention */
    scatter_heads(layer_cache(s->k_cache, c, l), s->ATT, n, c);
    gemm_wt(s, n, s->XB, &L->wv, 0.0f, s->ATT);
    scatter_heads(layer_cache(s->v_cache, c, l), s->ATT, n, c);
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
                    j->qh + (size_t)r0 * d, d, j->kh, dh, 0.0f, s->S + (size_t)r0 * n, n);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, mr, dh, 1.0f,
                    j->qh + (size_t)r0 * d, d, j->eh, dh, 0.0f, s->R + (size_t)r0 * m, m);
        rel_softmax_rows(s->S, s->R, n, m, j->scale, r0, r1);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, dh, r1, 1.0f,
                    s->S + (size_t)r0 * n, n, j->vh, dh, 0.0f, j->out + (size_t)r0 * d, d);
    }
}

/* ATT = relative causal self-attention of all n rows, head by head:
 * ATT_h = softmax(mask((Q_h K_h^T + skew(Q_h E_h^T)) / sqrt(d_head))) V_h. */
static void prefill_attention(model_state *s, int l, const layer_weights *L, int n)
{
    const model_config *c = &s->m->cfg;
    int dh = c->d_head, M = c->max_rel;
    const float *kc = layer_cache(s->k_cache, c, l), *vc = layer_cache(s->v_cache, c, l);
    const float *E = L->er.data;               /* (n_heads, max_rel, dh), F32 */
    head_job j = { .s = s, .n = n, .m = n < M ? n : M, .scale = 1.0f / sqrtf((float)dh) };
    for (int h = 0; h < c->n_heads; h++) {
        size_t at = (size_t)h * c->context * dh;
        j.qh = s->Q + h * dh;
        j.kh = kc + at;
        j.eh = E + (size_t)h * M * dh;
        j.vh = vc + at;
        j.out = s->ATT + h * dh;
        pool_run(s->pool, head_blocks, &j);
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
 * row into s->logits), or, when ALL_LOGITS is NULL, the last row alone. */
static void prefill_logits(model_state *s, int n, float *all_logits)
{
    const model *m = s->m;
    const model_config *c = &m->cfg;
    int d = c->d_model;
    if (all_logits) {
        prefill_norm(s, n, m->w.out_norm_w, m->w.out_norm_b);
        gemm_wt(s, n, s->XB, &s->pw.token_embd, 0.0f, all_logits);
        memcpy(s->logits, all_logits + (size_t)(n - 1) * c->vocab_size, sizeof(float) * (size_t)c->vocab_size);
    } else {
        layernorm(s->xb, s->X + (size_t)(n - 1) * d, m->w.out_norm_w, m->w.out_norm_b, d, c->ln_eps);
        matvec(s->logits, &m->w.token_embd, s->xb, 0, c->vocab_size);
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

int model_prefill(model_state *s, const int *tokens, int n, float *all_logits)
{
    const model *m = s->m;
    const model_config *c = &m->cfg;
    int d = c->d_model;
    if (check_prefill(c, tokens, n) != 0)
        return -1;
    memmove(s->tokens, tokens, sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)                               /* X = the events' embeddings */
        matrix_row(s->X + (size_t)i * d, &m->w.token_embd, s->tokens[i]);
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = &s->pw.layers[l];
        prefill_norm(s, n, L->attn_norm_w, L->attn_norm_b);   /* XB = LN1(X) */
        prefill_qkv(s, l, L, n);                              /* Q, K, V = XB Wq^T, XB Wk^T, XB Wv^T */
        prefill_attention(s, l, L, n);                        /* ATT = relative causal attention */
        gemm_wt(s, n, s->ATT, &L->wo, 1.0f, s->X);            /* X += ATT Wo^T */
        prefill_norm(s, n, L->ffn_norm_w, L->ffn_norm_b);     /* XB = LN2(X) */
        gemm_wt(s, n, s->XB, &L->w_up, 0.0f, s->H);           /* H = XB W1^T */
        prefill_bias_gelu(s, L->b_up, n);                     /* H = gelu(H + b1) */
        gemm_wt(s, n, s->H, &L->w_down, 1.0f, s->X);          /* X += H W2^T */
        prefill_add_bias(s, L->b_down, n);                    /* X += b2 */
    }
    prefill_logits(s, n, all_logits);                         /* logits = LN_f(X) E^T */
    s->n = n;
    s->pos = n;
    s->version++;
    return 0;
}

/* ------------------------------------------------------------------ decode */

/* One layer of one decode step, handed to the pool: each step below splits
 * its matrix's rows (or the heads) among the pool's threads. */
typedef struct decode_layer {
    model_state *s;
    const layer_weights *L;     /* NULL for the logits */
    float *kc, *vc;             /* this layer's cache, (n_heads, context, d_head) */
    int p;                      /* slot of the new event in the cache */
    int n_keys;                 /* events in the cache, the new one included */
} decode_layer;

/* q = Wq xb; k = Wk xb and v = Wv xb into the cache at slot p. */
static void decode_qkv(void *ctx, int i, int nt)
{
    const decode_layer *j = ctx;
    model_state *s = j->s;
    const model_config *c = &s->m->cfg;
    int dh = c->d_head, lo, hi;
    pool_split(c->d_model, i, nt, 16, &lo, &hi);
    matvec(s->q + lo, &j->L->wq, s->xb, lo, hi);
    for (int a = lo; a < hi;) {            /* rows of one head at a time: head-major cache */
        int h = a / dh, b = (h + 1) * dh < hi ? (h + 1) * dh : hi;
        size_t at = ((size_t)h * c->context + (size_t)j->p) * dh + (size_t)(a - h * dh);
        matvec(j->kc + at, &j->L->wk, s->xb, a, b);
        matvec(j->vc + at, &j->L->wv, s->xb, a, b);
        a = b;
    }
}

/* att_h = softmax((q_h K_h^T + q_h E_h^T skewed to the ring) / sqrt(d_head)) V_h,
 * head by head, over the n_keys cached events (attend_query). */
static void decode_attention(void *ctx, int i, int nt)
{
    const decode_layer *j = ctx;
    model_state *s = j->s;
    const model_config *c = &s->m->cfg;
    const layer_weights *L = j->L;
    int dh = c->d_head, M = c->max_rel, lo, hi;
    size_t esize = L->er.type == GGML_TYPE_F16 ? 2 : 4;
    float scale = 1.0f / sqrtf((float)dh);
    pool_split(c->n_heads, i, nt, 1, &lo, &hi);
    for (int h = lo; h < hi; h++) {
        matrix er = { (const char *)L->er.data + (size_t)h * M * dh * esize, L->er.type, M, dh };
        size_t at = (size_t)h * c->context * dh;
        attend_query(s->att + h * dh, s->q + h * dh, j->kc + at, j->vc + at, dh, j->n_keys, j->p,
                     &er, dh, scale, s->scores + (size_t)h * c->context, s->rel + (size_t)h * M);
    }
}

/* x += Wo att: the output projection and the residual. */
static void decode_out_residual(void *ctx, int i, int nt)
{
    const decode_layer *j = ctx;
    model_state *s = j->s;
    int lo, hi;
    pool_split(s->m->cfg.d_model, i, nt, 16, &lo, &hi);
    matvec(s->xb + lo, &j->L->wo, s->att, lo, hi);
    for (int r = lo; r < hi; r++)
        s->x[r] += s->xb[r];
}

/* hb = gelu(W1 xb + b1). */
static void decode_ffn_up(void *ctx, int i, int nt)
{
    const decode_layer *j = ctx;
    model_state *s = j->s;
    int lo, hi;
    pool_split(s->m->cfg.d_ff, i, nt, 16, &lo, &hi);
    matvec(s->hb + lo, &j->L->w_up, s->xb, lo, hi);
    for (int r = lo; r < hi; r++)
        s->hb[r] += j->L->b_up[r];
    gelu(s->hb + lo, hi - lo);
}

/* x += W2 hb + b2: the down projection and the residual (q is scratch). */
static void decode_ffn_down_residual(void *ctx, int i, int nt)
{
    const decode_layer *j = ctx;
    model_state *s = j->s;
    int lo, hi;
    pool_split(s->m->cfg.d_model, i, nt, 16, &lo, &hi);
    matvec(s->q + lo, &j->L->w_down, s->hb, lo, hi);
    for (int r = lo; r < hi; r++)
        s->x[r] += s->q[r] + j->L->b_down[r];
}

/* logits = E xb (the output projection is the embedding, tied). */
static void decode_logits(void *ctx, int i, int nt)
{
    const decode_layer *j = ctx;
    model_state *s = j->s;
    int lo, hi;
    pool_split(s->m->cfg.vocab_size, i, nt, 16, &lo, &hi);
    matvec(s->logits + lo, &s->m->w.token_embd, s->xb, lo, hi);
}

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

const float *model_decode(model_state *s, int token)
{
    const model *m = s->m;
    const model_config *c = &m->cfg;
    int d = c->d_model;
    if (token < 0 || token >= c->vocab_size)
        token = 0;          /* callers pass sampled ids; never index out of the table */
    int p = decode_slot(s);
    if (p < 0)
        return NULL;
    int n_keys = s->n < c->context ? s->n + 1 : c->context;
    s->tokens[p] = token;
    matrix_row(s->x, &m->w.token_embd, token);                      /* x = the event's embedding */
    decode_layer j = { .s = s, .p = p, .n_keys = n_keys };
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = j.L = &m->w.layers[l];
        j.kc = layer_cache(s->k_cache, c, l);
        j.vc = layer_cache(s->v_cache, c, l);
        layernorm(s->xb, s->x, L->attn_norm_w, L->attn_norm_b, d, c->ln_eps);   /* xb = LN1(x) */
        pool_run(s->pool, decode_qkv, &j);              /* q, k[p], v[p] = Wq xb, Wk xb, Wv xb */
        pool_run(s->pool, decode_attention, &j);        /* att = relative attention over the cache */
        pool_run(s->pool, decode_out_residual, &j);     /* x += Wo att */
        layernorm(s->xb, s->x, L->ffn_norm_w, L->ffn_norm_b, d, c->ln_eps);     /* xb = LN2(x) */
        pool_run(s->pool, decode_ffn_up, &j);           /* hb = gelu(W1 xb + b1) */
        pool_run(s->pool, decode_ffn_down_residual, &j);    /* x += W2 hb + b2 */
    }
    layernorm(s->xb, s->x, m->w.out_norm_w, m->w.out_norm_b, d, c->ln_eps);     /* xb = LN_f(x) */
    pool_run(s->pool, decode_logits, &j);               /* logits = E xb */
    s->n = n_keys;
    s->pos++;
    s->version++;
    return s->logits;
}
