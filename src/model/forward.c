/* forward.c: the forward pass: prefill of a whole window (sgemm, skewed relative logits, causal half) and one-event decode with the KV cache (sliding window or rolling ring). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "model/model.h"
#include "util/log.h"

/* C (n, rows of W) = A (n, cols of W) . W^T + beta C, all row-major; W is
 * one of s->pw's matrices (F32). */
static void gemm_wt(int n, const float *A, const matrix *w, float beta, float *C)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, w->rows, w->cols, 1.0f, A, w->cols,
                w->data, w->cols, beta, C, w->rows);
}

/* ------------------------------------------------------------------ prefill */

/* Row-parallel steps of the prefill, run on the pool. */
enum prefill_step { P_LN1, P_LN2, P_UP_GELU, P_DOWN_BIAS, P_LN_FINAL, P_REL_SOFTMAX };

typedef struct prefill_job {
    model_state *s;
    const layer_weights *L;
    enum prefill_step step;
    int n;              /* rows */
    int m;              /* columns of R */
    float scale;
} prefill_job;

static void prefill_rows(void *ctx, int i, int nt)
{
    prefill_job *j = ctx;
    model_state *s = j->s;
    const model_config *c = &s->m->cfg;
    int d = c->d_model, lo, hi;
    if (j->step == P_REL_SOFTMAX) {
        /* row r costs about r: cut at n*sqrt(i/nt) so the parts weigh the same */
        lo = (int)(j->n * sqrt((double)i / nt));
        hi = (int)(j->n * sqrt((double)(i + 1) / nt));
        if (i + 1 == nt)
            hi = j->n;
        rel_softmax_rows(s->S, s->R, j->n, j->m, j->scale, lo, hi);
        return;
    }
    pool_split(j->n, i, nt, 1, &lo, &hi);
    for (int r = lo; r < hi; r++) {
        float *x = s->X + (size_t)r * d, *xb = s->XB + (size_t)r * d;
        switch (j->step) {
        case P_LN1:
            layernorm(xb, x, j->L->attn_norm_w, j->L->attn_norm_b, d, c->ln_eps);
            break;
        case P_LN2:
            layernorm(xb, x, j->L->ffn_norm_w, j->L->ffn_norm_b, d, c->ln_eps);
            break;
        case P_UP_GELU: {
            float *h = s->H + (size_t)r * c->d_ff;
            for (int k = 0; k < c->d_ff; k++)
                h[k] += j->L->b_up[k];
            gelu(h, c->d_ff);
            break;
        }
        case P_DOWN_BIAS:
            for (int k = 0; k < d; k++)
                x[k] += j->L->b_down[k];
            break;
        case P_LN_FINAL:
            layernorm(xb, x, s->m->w.out_norm_w, s->m->w.out_norm_b, d, c->ln_eps);
            break;
        default:
            break;
        }
    }
}

static void run_rows(model_state *s, const layer_weights *L, enum prefill_step step, int n)
{
    prefill_job j = { s, L, step, n, 0, 0 };
    pool_run(s->pool, prefill_rows, &j);
}

/* Rows of queries per block of the prefill's attention: a block attends only
 * to the keys up to its last row, so the score matrix is computed (and
 * multiplied by V) about half: n^2/2 + n*PREFILL_BLOCK/2 entries, not n^2. */
#define PREFILL_BLOCK 64

/* Relative self-attention of all N rows, head by head, into s->ATT. */
static void prefill_attention(model_state *s, int l, const layer_weights *L, int n)
{
    const model_config *c = &s->m->cfg;
    int d = c->d_model, dh = c->d_head, M = c->max_rel;
    int m = n < M ? n : M;
    const float *kc = s->k_cache + (size_t)l * c->context * d;
    const float *vc = s->v_cache + (size_t)l * c->context * d;
    const float *E = L->er.data;               /* (n_heads, max_rel, dh), F32 */
    prefill_job j = { s, L, P_REL_SOFTMAX, n, m, 1.0f / sqrtf((float)dh) };
    for (int h = 0; h < c->n_heads; h++) {
        const float *qh = s->Q + h * dh;
        const float *kh = kc + (size_t)h * c->context * dh, *vh = vc + (size_t)h * c->context * dh;
        /* rows [r0, r1): S = Q_h K_h^T over keys 0..r1-1, R = Q_h E_h^T over
         * distances 0..min(r1, m)-1 (R[i][dist]); what lies right of that is
         * never read: rel_softmax_rows masks j > i */
        for (int r0 = 0; r0 < n; r0 += PREFILL_BLOCK) {
            int r1 = r0 + PREFILL_BLOCK < n ? r0 + PREFILL_BLOCK : n, mr = r1 < m ? r1 : m;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1, dh, 1.0f,
                        qh + (size_t)r0 * d, d, kh, dh, 0.0f, s->S + (size_t)r0 * n, n);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, mr, dh, 1.0f,
                        qh + (size_t)r0 * d, d, E + (size_t)h * M * dh, dh, 0.0f, s->R + (size_t)r0 * m, m);
        }
        pool_run(s->pool, prefill_rows, &j);   /* skew R into S, scale, mask, softmax */
        for (int r0 = 0; r0 < n; r0 += PREFILL_BLOCK) {
            int r1 = r0 + PREFILL_BLOCK < n ? r0 + PREFILL_BLOCK : n;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, dh, r1, 1.0f,
                        s->S + (size_t)r0 * n, n, vh, dh, 0.0f, s->ATT + (size_t)r0 * d + h * dh, d);
        }
    }
}

/* The cache is head-major, (n_heads, context, d_head) per layer, so one head's
 * keys are contiguous for decode: copies rows (n, d_model) of SRC into it. */
static void scatter_heads(float *cache, const float *src, int n, const model_config *c)
{
    int dh = c->d_head;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < c->n_heads; h++)
            memcpy(cache + ((size_t)h * c->context + i) * dh, src + (size_t)i * c->d_model + h * dh,
                   sizeof(float) * (size_t)dh);
}

int model_prefill(model_state *s, const int *tokens, int n, float *all_logits)
{
    const model *m = s->m;
    const model_config *c = &m->cfg;
    int d = c->d_model;
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
    memmove(s->tokens, tokens, sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        matrix_row(s->X + (size_t)i * d, &m->w.token_embd, s->tokens[i]);
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = &s->pw.layers[l];
        float *kc = s->k_cache + (size_t)l * c->context * d;
        float *vc = s->v_cache + (size_t)l * c->context * d;
        run_rows(s, L, P_LN1, n);
        gemm_wt(n, s->XB, &L->wq, 0.0f, s->Q);
        gemm_wt(n, s->XB, &L->wk, 0.0f, s->ATT);            /* ATT: scratch until attention */
        scatter_heads(kc, s->ATT, n, c);
        gemm_wt(n, s->XB, &L->wv, 0.0f, s->ATT);
        scatter_heads(vc, s->ATT, n, c);
        prefill_attention(s, l, L, n);
        gemm_wt(n, s->ATT, &L->wo, 1.0f, s->X);             /* X += ATT Wo^T */
        run_rows(s, L, P_LN2, n);
        gemm_wt(n, s->XB, &L->w_up, 0.0f, s->H);
        run_rows(s, L, P_UP_GELU, n);
        gemm_wt(n, s->H, &L->w_down, 1.0f, s->X);           /* X += H W2^T */
        run_rows(s, L, P_DOWN_BIAS, n);
    }
    if (all_logits) {
        run_rows(s, NULL, P_LN_FINAL, n);
        gemm_wt(n, s->XB, &s->pw.token_embd, 0.0f, all_logits);
        memcpy(s->logits, all_logits + (size_t)(n - 1) * c->vocab_size, sizeof(float) * (size_t)c->vocab_size);
    } else {
        layernorm(s->xb, s->X + (size_t)(n - 1) * d, m->w.out_norm_w, m->w.out_norm_b, d, c->ln_eps);
        matvec(s->logits, &m->w.token_embd, s->xb, 0, c->vocab_size);
    }
    s->n = n;
    s->pos = n;
    return 0;
}

/* ------------------------------------------------------------------ decode */

/* Parallel steps of one decode step. */
enum decode_step { D_QKV, D_ATTN, D_WO, D_UP, D_DOWN, D_LOGITS };

typedef struct decode_job {
    model_state *s;
    const layer_weights *L;
    enum decode_step step;
    int l;              /* layer */
    int p;              /* slot of the new event in the cache */
    int n_keys;         /* events in the cache, the new one included */
} decode_job;

static void decode_part(void *ctx, int i, int nt)
{
    decode_job *j = ctx;
    model_state *s = j->s;
    const model_config *c = &s->m->cfg;
    const layer_weights *L = j->L;
    int d = c->d_model, lo, hi;
    float *kc = s->k_cache + (size_t)j->l * c->context * d;
    float *vc = s->v_cache + (size_t)j->l * c->context * d;
    switch (j->step) {
    case D_QKV:
        pool_split(d, i, nt, 16, &lo, &hi);
        matvec(s->q + lo, &L->wq, s->xb, lo, hi);
        for (int a = lo; a < hi;) {            /* rows of one head at a time: head-major cache */
            int h = a / c->d_head, b = (h + 1) * c->d_head < hi ? (h + 1) * c->d_head : hi;
            size_t at = ((size_t)h * c->context + (size_t)j->p) * c->d_head + (size_t)(a - h * c->d_head);
            matvec(kc + at, &L->wk, s->xb, a, b);
            matvec(vc + at, &L->wv, s->xb, a, b);
            a = b;
        }
        break;
    case D_ATTN: {
        int dh = c->d_head, M = c->max_rel;
        size_t esize = L->er.type == GGML_TYPE_F16 ? 2 : 4;
        float scale = 1.0f / sqrtf((float)dh);
        pool_split(c->n_heads, i, nt, 1, &lo, &hi);
        for (int h = lo; h < hi; h++) {
            matrix er = { (const char *)L->er.data + (size_t)h * M * dh * esize, L->er.type, M, dh };
            attend_query(s->att + h * dh, s->q + h * dh, kc + (size_t)h * c->context * dh,
                         vc + (size_t)h * c->context * dh, dh, j->n_keys, j->p, &er, dh,
                         scale, s->scores + (size_t)h * c->context, s->rel + (size_t)h * M);
        }
        break;
    }
    case D_WO:
        pool_split(d, i, nt, 16, &lo, &hi);
        matvec(s->xb + lo, &L->wo, s->att, lo, hi);
        for (int r = lo; r < hi; r++)
            s->x[r] += s->xb[r];
        break;
    case D_UP:
        pool_split(c->d_ff, i, nt, 16, &lo, &hi);
        matvec(s->hb + lo, &L->w_up, s->xb, lo, hi);
        for (int r = lo; r < hi; r++)
            s->hb[r] += L->b_up[r];
        gelu(s->hb + lo, hi - lo);
        break;
    case D_DOWN:
        pool_split(d, i, nt, 16, &lo, &hi);
        matvec(s->q + lo, &L->w_down, s->hb, lo, hi);
        for (int r = lo; r < hi; r++)
            s->x[r] += s->q[r] + L->b_down[r];
        break;
    case D_LOGITS:
        pool_split(c->vocab_size, i, nt, 16, &lo, &hi);
        matvec(s->logits + lo, &s->m->w.token_embd, s->xb, lo, hi);
        break;
    }
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

const float *model_decode(model_state *s, int token)
{
    const model *m = s->m;
    const model_config *c = &m->cfg;
    int d = c->d_model;
    if (token < 0 || token >= c->vocab_size)
        token = 0;          /* callers pass sampled ids; never index out of the table */
    int p;
    if (s->memory == MODEL_MEMORY_STREAM) {
        p = (int)(s->pos % c->context);     /* full: the oldest event's slot */
    } else {
        if (s->n >= c->context && model_slide(s) != 0)
            return NULL;
        p = s->n;
    }
    int n_keys = s->n < c->context ? s->n + 1 : c->context;
    s->tokens[p] = token;
    matrix_row(s->x, &m->w.token_embd, token);
    decode_job j = { s, NULL, D_QKV, 0, p, n_keys };
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = &m->w.layers[l];
        j.L = L;
        j.l = l;
        layernorm(s->xb, s->x, L->attn_norm_w, L->attn_norm_b, d, c->ln_eps);
        j.step = D_QKV;
        pool_run(s->pool, decode_part, &j);
        j.step = D_ATTN;
        pool_run(s->pool, decode_part, &j);
        j.step = D_WO;
        pool_run(s->pool, decode_part, &j);
        layernorm(s->xb, s->x, L->ffn_norm_w, L->ffn_norm_b, d, c->ln_eps);
        j.step = D_UP;
        pool_run(s->pool, decode_part, &j);
        j.step = D_DOWN;
        pool_run(s->pool, decode_part, &j);
    }
    layernorm(s->xb, s->x, m->w.out_norm_w, m->w.out_norm_b, d, c->ln_eps);
    j.step = D_LOGITS;
    pool_run(s->pool, decode_part, &j);
    s->n = n_keys;
    s->pos++;
    return s->logits;
}
