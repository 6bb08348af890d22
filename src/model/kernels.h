/* kernels.h: the numeric kernels of the forward pass, each with a naive twin for tests. */
#ifndef CONTINUO_KERNELS_H
#define CONTINUO_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Instruction set used by the fast kernels. Each level is a table of
 * function pointers; the best one this CPU has (__builtin_cpu_supports) is
 * chosen once, when the program starts, and every kernel call goes through
 * the table with no test of the level. Tests may force a lower level. */
typedef enum kernel_level {
    KERNEL_SCALAR = 0,      /* portable C */
    KERNEL_AVX2 = 1,        /* AVX2 + FMA + F16C */
    KERNEL_AVX512 = 2       /* AVX-512F */
} kernel_level;

kernel_level kernels_best_level(void);       /* what this CPU supports */
kernel_level kernels_level(void);            /* what is in use */
void kernels_set_level(kernel_level level);  /* clamped to the best level; not while kernels run */
const char *kernels_level_name(kernel_level level);

/* IEEE half <-> float (round to nearest even). */
float    f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
void     f16_to_f32_row(float *out, const uint16_t *in, size_t n);
/* Half floats of IN (n), rounded to nearest even (f32_to_f16's bits). */
void     f32_to_f16_row(uint16_t *out, const float *in, size_t n);

/* A row-major (rows, cols) matrix stored as F32, F16 or I8 (GGML_TYPE_*):
 * an I8 matrix's row r is its int8 weights times scale[r]. */
typedef struct matrix {
    const void *data;       /* borrowed: points into the mapped model file */
    int type;               /* GGML_TYPE_F32, GGML_TYPE_F16 or GGML_TYPE_I8 */
    int rows, cols;
    const float *scale;     /* I8: the rows' scales (rows floats, borrowed); else NULL */
} matrix;

/* Row R of M as floats into OUT (cols). */
void matrix_row(float *out, const matrix *m, int r);
/* OUT (rows*cols) = all of M as floats. */
void matrix_to_f32(float *out, const matrix *m);

/* out[r - r0] = W[r] . x for r in [r0, r1). */
void matvec(float *out, const matrix *w, const float *x, int r0, int r1);
/* The same for NB vectors at once, each row of W read once for all of them:
 * out[b * ldo + r - r0] = W[r] . x_b, x_b = X + b * ldx, b < NB.  Each
 * result has exactly matvec's bits for its vector (the same operations in
 * the same order), so a batch decodes what one sequence alone would. */
void matmat(float *out, size_t ldo, const matrix *w, const float *x, size_t ldx, int nb, int r0, int r1);
void matvec_naive(float *out, const matrix *w, const float *x, int r0, int r1);

float dot_f32(const float *a, const float *b, int n);
void  axpy_f32(float *y, float a, const float *x, int n);      /* y += a x */

/* LayerNorm of X (n) with gain G and bias B into OUT; mean and variance in double. */
void layernorm(float *out, const float *x, const float *g, const float *b, int n, float eps);
/* layernorm of ROWS rows LD floats apart (X into OUT), each with its bits. */
void layernorm_rows(float *out, const float *x, size_t ld, int rows, const float *g, const float *b, int n, float eps);
/* Exact GELU in place: 0.5 x (1 + erf(x / sqrt 2)); the vector levels
 * compute erf as PyTorch's vectorized erf does (Abramowitz-Stegun 7.1.26,
 * |error| < 1.5e-7) and exp to about 1 ulp. */
void gelu(float *x, int n);
/* Softmax in place over X (n). */
void softmax(float *x, int n);

/* Relative attention of one query (one head) over N_KEYS cached keys and
 * values, half floats, held as a ring: row NEWEST is the query's own
 * event (distance 0) and row j is
 * (NEWEST - j) mod N_KEYS events older; a cache that has not wrapped passes
 * NEWEST = n_keys-1 (rows oldest first). Key/value rows are LD halves apart.
 * score_j = (q.k_j + [dist_j < max_rel] q.E[dist_j]) * scale; out = softmax . V.
 * ER: this head's (max_rel, dh) table. SCORES (n_keys) and REL
 * (min(n_keys, max_rel)) are scratch. Allocates nothing. */
void attend_query(float *out, const float *q, const uint16_t *k, const uint16_t *v, int ld,
                  int n_keys, int newest, const matrix *er, int dh, float scale, float *scores,
                  float *rel);
/* attend_query after its first step: REL (min(n_keys, max_rel)) already
 * holds q . E[d] (a batch computes it for all its queries in one matmat). */
void attend_rel(float *out, const float *q, const uint16_t *k, const uint16_t *v, int ld, int n_keys, int newest,
                const float *rel, int max_rel, int dh, float scale, float *scores);
/* attend_rel in pieces, for sequences whose caches share rows (a batch's
 * forks read those rows once for all of them); each piece gives the bits
 * attend_rel gives.  Scores of NQ queries (LDQ floats apart) against key
 * rows J0..J1-1 into SCORES + J0 (each query's LDS floats apart). */
void attend_scores(float *scores, const float *q, size_t ldq, size_t lds, int nq, const uint16_t *k, int ld, int dh,
                   int j0, int j1);
/* The relative term, the scale and the softmax over SCORES (n_keys). */
void attend_softmax(float *scores, int n_keys, int newest, const float *rel, int max_rel, float scale);
/* OUT (dh) += sum of P[j] V[j] for j in J0..J1-1, in order: runs taken in
 * order from an OUT of zeros give the bits of one pass. */
void attend_values(float *out, const uint16_t *v, int ld, const float *p, int j0, int j1, int dh);
/* attend_values for NQ queries over the same rows, each row read once for
 * all of them: OUT + b LDO (dh) += sum of (P + b LDP)[j] V[j], each query
 * with attend_values' bits. */
void attend_values_n(float *out, size_t ldo, const uint16_t *v, int ld, const float *p, size_t ldp, int nq, int j0,
                     int j1, int dh);
void attend_query_naive(float *out, const float *q, const uint16_t *k, const uint16_t *v, int ld,
                        int n_keys, int newest, const matrix *er, int dh, float scale, float *scores);

/* Prefill, one head, rows [i0, i1) of an L x L score matrix S that holds
 * q_i.k_j: adds the relative term by skewing R, where R is L x m with
 * R[i][d] = q_i.E[d] (m = min(L, max_rel)) and S_rel[i][j] = R[i][i-j] for
 * i-j < m, else 0; scales, applies the causal mask and softmax: row i of S
 * becomes attention probabilities (0 for j > i). */
void rel_softmax_rows(float *S, const float *R, int L, int m, float scale, int i0, int i1);
/* The naive twin: probabilities P (L x L) straight from q, k and E. */
void rel_probs_naive(float *P, const float *q, const float *k, int ld, const float *er,
                     int max_rel, int L, int dh, float scale);

#endif
