/* test_kernels.c: every fast kernel (each instruction set this CPU has) against its naive twin; batched rows to the bit of one; half floats; the thread pool. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/gguf.h"
#include "model/kernels.h"
#include "model/pool.h"

static unsigned long long rng = 88172645463325252ull;

static float frand(void)   /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * 0x1p-24 * 2.0 - 1.0);
}

static double max_rel_diff(const float *a, const float *b, int n)
{
    double d = 0, s = 1e-6;
    for (int i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs((double)b[i]));
    }
    return d / s;
}

static void test_half(void)
{
    int bad = 0;
    for (unsigned h = 0; h < 65536; h++) {
        float f = f16_to_f32((uint16_t)h);
        if (isnan(f))
            continue;
        bad += f32_to_f16(f) != h;
    }
    CHECK_INT(bad, 0);
    CHECK(f16_to_f32(0x3c00) == 1.0f);
    CHECK(f16_to_f32(0xc000) == -2.0f);
    CHECK(f32_to_f16(65504.0f) == 0x7bff);
    CHECK(f32_to_f16(1e6f) == 0x7c00);
    CHECK(f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);      /* a tie rounds to even */
    CHECK(f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);
    uint16_t hs[37];
    float a[37], b[37];
    for (int i = 0; i < 37; i++)
        hs[i] = f32_to_f16(frand() * 100);
    f16_to_f32_row(a, hs, 37);
    for (int i = 0; i < 37; i++)
        b[i] = f16_to_f32(hs[i]);
    CHECK(memcmp(a, b, sizeof a) == 0);
}

/* W (ROWS x COLS) as int8 rows and their scales, as train/export.py's
 * quantize_rows stores them. */
static void quantize(int8_t *q, float *scale, const float *w, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        float mx = 0;
        for (int i = 0; i < cols; i++)
            mx = fmaxf(mx, fabsf(w[(size_t)r * cols + i]));
        scale[r] = mx > 0 ? mx / 127 : 1;
        for (int i = 0; i < cols; i++)
            q[(size_t)r * cols + i] = (int8_t)lrintf(w[(size_t)r * cols + i] / scale[r]);
    }
}

static void test_matvec(void)
{
    int shapes[][2] = { { 17, 64 }, { 40, 512 }, { 3, 37 }, { 64, 1 }, { 9, 130 } };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int rows = shapes[k][0], cols = shapes[k][1];
        float *w = malloc(sizeof(float) * rows * cols), *x = malloc(sizeof(float) * cols);
        uint16_t *wh = malloc(2 * (size_t)rows * cols);
        float fast[64], naive[64];
        for (int i = 0; i < rows * cols; i++) {
            w[i] = frand();
            wh[i] = f32_to_f16(w[i]);
        }
        for (int i = 0; i < cols; i++)
            x[i] = frand();
        matrix m32 = { w, GGML_TYPE_F32, rows, cols, NULL }, m16 = { wh, GGML_TYPE_F16, rows, cols, NULL };
        matvec(fast, &m32, x, 0, rows);
        matvec_naive(naive, &m32, x, 0, rows);
        CHECK(max_rel_diff(fast, naive, rows) < 1e-5);
        matvec(fast, &m16, x, 1, rows);            /* a row range */
        matvec_naive(naive, &m16, x, 1, rows);
        CHECK(max_rel_diff(fast, naive, rows - 1) < 1e-5);
        /* the F16 kernel reads halves: it differs from F32 by their rounding
         * only, at most 2^-11 of each |w x| (a relative bound fails where a
         * row's sum cancels) */
        matvec(naive, &m32, x, 1, rows);
        for (int r = 1; r < rows; r++) {
            double mag = 0;
            for (int i = 0; i < cols; i++)
                mag += fabs((double)w[(size_t)r * cols + i] * x[i]);
            CHECK(fabs((double)fast[r - 1] - naive[r - 1]) <= 0x1p-11 * mag * 1.01 + 1e-6);
        }
        /* int8 rows with their scales: the kernel's sums times the scale are
         * the dequantized matrix's product */
        int8_t *wq = malloc((size_t)rows * cols);
        float scale[64];
        quantize(wq, scale, w, rows, cols);
        matrix m8 = { wq, GGML_TYPE_I8, rows, cols, scale };
        matvec(fast, &m8, x, 1, rows);
        matvec_naive(naive, &m8, x, 1, rows);
        CHECK(max_rel_diff(fast, naive, rows - 1) < 1e-5);
        float row[512];
        matrix_row(row, &m8, rows - 1);
        for (int i = 0; i < cols; i++)
            CHECK(row[i] == (float)wq[(size_t)(rows - 1) * cols + i] * scale[rows - 1]);
        free(wq);
        free(w);
        free(x);
        free(wh);
    }
}

/* matmat over NB vectors gives each one exactly matvec's bits, for every
 * number of vectors, odd shapes and a row range (a batch decodes what one
 * sequence alone would). */
static void test_matmat(void)
{
    enum { NB = 11, MAXC = 304 };
    /* short rows sixteen at a time with rows left over (d_head widths), long
     * ones with and without sixteen columns past the last 32 and a scalar tail */
    int shapes[][2] = { { 17, 64 }, { 40, 256 }, { 3, 37 }, { 64, 1 }, { 9, 130 }, { 21, 300 },
                        { 37, 48 }, { 50, 128 }, { 35, 16 }, { 19, 304 }, { 33, 272 } };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int rows = shapes[k][0], cols = shapes[k][1], bad = 0;
        float *w = malloc(sizeof(float) * rows * cols), x[NB][MAXC], one[64], many[NB][64], scale[64];
        uint16_t *wh = malloc(2 * (size_t)rows * cols);
        int8_t *wq = malloc((size_t)rows * cols);
        for (int i = 0; i < rows * cols; i++)
            wh[i] = f32_to_f16(w[i] = frand());
        quantize(wq, scale, w, rows, cols);
        for (int b = 0; b < NB; b++)
            for (int i = 0; i < cols; i++)
                x[b][i] = frand();
        matrix ms[3] = { { w, GGML_TYPE_F32, rows, cols, NULL }, { wh, GGML_TYPE_F16, rows, cols, NULL },
                         { wq, GGML_TYPE_I8, rows, cols, scale } };
        for (int t = 0; t < 3; t++)
            for (int nb = 1; nb <= NB; nb++) {
                matmat(&many[0][0], 64, &ms[t], &x[0][0], MAXC, nb, 1, rows);
                for (int b = 0; b < nb; b++) {
                    matvec(one, &ms[t], x[b], 1, rows);
                    bad += memcmp(one, many[b], sizeof(float) * (size_t)(rows - 1)) != 0;
                    /* and each is the one dot product's (F16 and I8 rows: the vector
                     * levels convert and then take dot_f32's steps, an I8 row's
                     * sum then times its scale; scalar has its own) */
                    for (int r = 1; r < rows && (t == 0 || kernels_level() > KERNEL_SCALAR); r++) {
                        float row[MAXC], dot;
                        if (t == 2)
                            for (int i = 0; i < cols; i++)
                                row[i] = wq[(size_t)r * cols + i];
                        else
                            matrix_row(row, &ms[t], r);
                        dot = dot_f32(row, x[b], cols);
                        if (t == 2)
                            dot *= scale[r];
                        bad += memcmp(&dot, &many[b][r - 1], sizeof dot) != 0;
                    }
                }
            }
        CHECK_INT(bad, 0);
        free(w);
        free(wh);
        free(wq);
    }
}

/* attend_values_n over several queries gives each attend_values' bits, for
 * every number of queries, d_head widths with and without their fast path,
 * row ranges and outputs that already hold a sum (runs taken in order). */
static void test_values_n(void)
{
    enum { ROWS = 37, MAXD = 64, NQ = 6 };
    static float p[NQ][ROWS], one[NQ][MAXD], many[NQ][MAXD];
    static uint16_t v[ROWS * 2 * MAXD];     /* a cache's values: half floats */
    int dhs[] = { 64, 32, 16, 24 }, bad = 0;
    for (size_t k = 0; k < sizeof dhs / sizeof dhs[0]; k++) {
        int dh = dhs[k], ld = 2 * dh;       /* rows of two heads: read every other one */
        for (int i = 0; i < ROWS * ld; i++)
            v[i] = f32_to_f16(frand());
        for (int b = 0; b < NQ; b++)
            for (int j = 0; j < ROWS; j++)
                p[b][j] = frand();
        for (int nq = 1; nq <= NQ; nq++) {
            for (int b = 0; b < nq; b++)
                for (int c = 0; c < dh; c++)
                    one[b][c] = many[b][c] = frand();
            attend_values_n(&many[0][0], MAXD, v, ld, &p[0][0], ROWS, nq, 0, 5, dh);
            attend_values_n(&many[0][0], MAXD, v, ld, &p[0][0], ROWS, nq, 5, ROWS, dh);
            for (int b = 0; b < nq; b++) {
                attend_values(one[b], v, ld, p[b], 0, 5, dh);
                attend_values(one[b], v, ld, p[b], 5, ROWS, dh);
                bad += memcmp(one[b], many[b], sizeof(float) * (size_t)dh) != 0;
            }
        }
    }
    CHECK_INT(bad, 0);
}

/* layernorm_rows gives each row layernorm's bits, for row counts on and
 * off its groups of four, and widths the vector levels take four columns
 * at a time (64, 256: d_model) or leave to the generic code (70). */
static void test_layernorm_rows(void)
{
    enum { MAXN = 256, ROWS = 9, LD = 272 };
    static float x[ROWS * LD], g[MAXN], bb[MAXN], one[MAXN], many[ROWS * LD];
    int ns[] = { 70, 64, 256 }, bad = 0;
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        int n = ns[t];
        for (int i = 0; i < ROWS * LD; i++)     /* rows of different means and spreads */
            x[i] = frand() * (float)(1 + i / LD) + 0.5f * (float)(i / LD);
        for (int i = 0; i < n; i++) {
            g[i] = frand();
            bb[i] = frand();
        }
        for (int rows = 1; rows <= ROWS; rows++) {
            layernorm_rows(many, x, LD, rows, g, bb, n, 1e-5f);
            for (int r = 0; r < rows; r++) {
                layernorm(one, x + r * LD, g, bb, n, 1e-5f);
                bad += memcmp(one, many + r * LD, sizeof(float) * (size_t)n) != 0;
            }
        }
    }
    CHECK_INT(bad, 0);
}

/* attend_softmax gives the bits of its definition step by step: the
 * relative term at each slot's distance on a ring, the scale, softmax. */
static void test_attend_softmax(void)
{
    enum { MAXN = 100 };
    int ns[] = { 1, 5, 17, 40, 100 }, rels[] = { 8, 33, 200 }, bad = 0;
    float rel[200], a[MAXN], b[MAXN];
    for (int d = 0; d < 200; d++)
        rel[d] = frand() * 4;
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++)
        for (size_t r = 0; r < sizeof rels / sizeof rels[0]; r++) {
            int n = ns[t], newest[3] = { n - 1, n / 2, 0 };
            for (int w = 0; w < 3; w++) {
                for (int j = 0; j < n; j++)
                    a[j] = b[j] = frand() * 6;
                attend_softmax(a, n, newest[w], rel, rels[r], 0.125f);
                for (int j = 0; j < n; j++) {
                    int dist = (newest[w] - j + n) % n;
                    if (dist < rels[r])
                        b[j] += rel[dist];
                    b[j] *= 0.125f;
                }
                softmax(b, n);
                bad += memcmp(a, b, sizeof(float) * (size_t)n) != 0;
            }
        }
    CHECK_INT(bad, 0);
}

/* GELU and softmax against double precision, over the ranges they meet. */
static void test_gelu_softmax(void)
{
    enum { N = 1001 };
    float x[N], y[N];
    double worst = 0;
    for (int i = 0; i < N; i++)
        y[i] = x[i] = -12.0f + 24.0f * i / (N - 1);
    gelu(y, N);
    for (int i = 0; i < N; i++)
        worst = fmax(worst, fabs(y[i] - 0.5 * x[i] * (1 + erf(x[i] / sqrt(2.0)))));
    CHECK(worst < 1e-6);
    double mx = -1e9, sum = 0;
    for (int i = 0; i < N; i++) {
        y[i] = x[i] = -60.0f + 70.0f * frand();
        mx = fmax(mx, x[i]);
    }
    for (int i = 0; i < N; i++)
        sum += exp(x[i] - mx);
    softmax(y, N);
    worst = 0;
    for (int i = 0; i < N; i++) {
        double p = exp(x[i] - mx) / sum;
        if (p > 1e-30)
            worst = fmax(worst, fabs(y[i] - p) / p);
    }
    CHECK(worst < 1e-5);
}

static void test_attend_query_dh(int dh)
{
    enum { MAXK = 40, MAXD = 64, M = 10 };
    int ld = 3 * dh;
    static float er[M * MAXD], er2[M * MAXD];
    static uint16_t k[MAXK * 3 * MAXD], v[MAXK * 3 * MAXD];    /* a cache: half floats */
    float q[MAXD], fast[MAXD], naive[MAXD], scores[MAXK], rel[M];
    static uint16_t erh[M * MAXD];
    for (int i = 0; i < MAXK * ld; i++) {
        k[i] = f32_to_f16(frand());
        v[i] = f32_to_f16(frand());
    }
    for (int i = 0; i < M * dh; i++) {
        er[i] = frand();
        erh[i] = f32_to_f16(er[i]);
    }
    for (int i = 0; i < dh; i++)
        q[i] = frand() * 2;
    matrix e32 = { er, GGML_TYPE_F32, M, dh, NULL }, e16 = { erh, GGML_TYPE_F16, M, dh, NULL };
    int ns[] = { 1, 5, 10, 11, 40 };     /* below, at and past max_rel */
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        int lds[2] = { ld, dh };         /* keys interleaved with other heads, or contiguous */
        int n = ns[t], newest[3] = { n - 1, n / 2, 0 };   /* in order, and rings wrapped twice */
        for (int l = 0; l < 2; l++)
            for (int r = 0; r < 3; r++) {
                attend_query(fast, q, k, v, lds[l], n, newest[r], &e32, dh, 0.3f, scores, rel);
                attend_query_naive(naive, q, k, v, lds[l], n, newest[r], &e32, dh, 0.3f, scores);
                CHECK(max_rel_diff(fast, naive, dh) < 1e-5);
                attend_query(fast, q, k, v, lds[l], n, newest[r], &e16, dh, 0.3f, scores, rel);
                attend_query_naive(naive, q, k, v, lds[l], n, newest[r], &e16, dh, 0.3f, scores);
                CHECK(max_rel_diff(fast, naive, dh) < 1e-5);
            }
    }
    /* A ring is the window it holds: rows rotated so the newest is at slot 3
     * attend exactly as the same rows oldest first. */
    static uint16_t kr[MAXK * MAXD], vr[MAXK * MAXD];
    int n = 23, rot = 3;
    for (int j = 0; j < n; j++) {       /* ordered row j (distance n-1-j) -> slot (j + rot + 1) % n */
        int slot = (j + rot + 1) % n;
        memcpy(kr + slot * dh, k + j * dh, sizeof *kr * (size_t)dh);
        memcpy(vr + slot * dh, v + j * dh, sizeof *vr * (size_t)dh);
    }
    attend_query(fast, q, k, v, dh, n, n - 1, &e32, dh, 0.3f, scores, rel);
    attend_query(naive, q, kr, vr, dh, n, rot, &e32, dh, 0.3f, scores, rel);
    CHECK(max_rel_diff(fast, naive, dh) < 1e-5);
    attend_query(naive, q, kr, vr, dh, n, rot + 1, &e32, dh, 0.3f, scores, rel);  /* off by one: differs */
    CHECK(max_rel_diff(fast, naive, dh) > 1e-4);
    /* the relative term matters: a different table changes the output past distance 0 */
    memcpy(er2, er, sizeof er);
    er2[5 * dh] += 5;
    matrix e2 = { er2, GGML_TYPE_F32, M, dh, NULL };
    attend_query(fast, q, k, v, ld, 11, 10, &e32, dh, 0.3f, scores, rel);
    attend_query(naive, q, k, v, ld, 11, 10, &e2, dh, 0.3f, scores, rel);
    CHECK(max_rel_diff(fast, naive, dh) > 1e-4);
}

static void test_attend_query(void)
{
    int dhs[] = { 24, 64, 16, 8, 5 };
    for (size_t i = 0; i < sizeof dhs / sizeof dhs[0]; i++)
        test_attend_query_dh(dhs[i]);
}

/* The prefill path (sgemm + skew) against relative logits computed one by one. */
static void test_skew(void)
{
    int Ls[] = { 1, 7, 16, 33 };
    int dh = 8, ld = 16, M = 12;
    for (size_t t = 0; t < sizeof Ls / sizeof Ls[0]; t++) {
        int L = Ls[t], m = L < M ? L : M;
        float *q = malloc(sizeof(float) * L * ld), *k = malloc(sizeof(float) * L * ld);
        float *er = malloc(sizeof(float) * M * dh), *S = malloc(sizeof(float) * L * L);
        float *R = malloc(sizeof(float) * L * m), *P = malloc(sizeof(float) * L * L);
        for (int i = 0; i < L * ld; i++) {
            q[i] = frand() * 2;
            k[i] = frand();
        }
        for (int i = 0; i < M * dh; i++)
            er[i] = frand();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dh, 1.0f, q, ld, k, ld, 0.0f, S, L);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, m, dh, 1.0f, q, ld, er, dh, 0.0f, R, m);
        rel_softmax_rows(S, R, L, m, 0.35f, 0, L / 2);
        rel_softmax_rows(S, R, L, m, 0.35f, L / 2, L);
        rel_probs_naive(P, q, k, ld, er, M, L, dh, 0.35f);
        CHECK(max_rel_diff(S, P, L * L) < 1e-5);
        free(q); free(k); free(er); free(S); free(R); free(P);
    }
}

static void test_misc(void)
{
    float x[5] = { 1, 2, 3, 4, 10 }, g[5] = { 1, 1, 1, 1, 1 }, b[5] = { 0 }, y[5];
    layernorm(y, x, g, b, 5, 1e-5f);
    double mean = 0, var = 0;
    for (int i = 0; i < 5; i++)
        mean += y[i];
    for (int i = 0; i < 5; i++)
        var += y[i] * y[i];
    CHECK_NEAR(mean, 0, 1e-5);
    CHECK_NEAR(var / 5, 1, 1e-4);
    float gx[3] = { -1, 0, 2 };
    gelu(gx, 3);
    CHECK_NEAR(gx[0], -0.15865525, 1e-6);
    CHECK_NEAR(gx[2], 1.9544997, 1e-6);
    float a[19], c[19], r[19];
    for (int i = 0; i < 19; i++) {
        a[i] = frand();
        c[i] = frand();
        r[i] = c[i] + 0.5f * a[i];
    }
    axpy_f32(c, 0.5f, a, 19);
    CHECK(max_rel_diff(c, r, 19) < 1e-6);
}

typedef struct sum_job {
    int counts[8];
} sum_job;

static void count_job(void *ctx, int i, int n)
{
    sum_job *j = ctx;
    (void)n;
    j->counts[i]++;
}

static void test_pool(void)
{
    for (int n = 1; n <= 3; n++) {
        pool *p = pool_new(n);
        CHECK(p != NULL);
        sum_job j = { { 0 } };
        for (int r = 0; r < 1000; r++)
            pool_run(p, count_job, &j);
        for (int i = 0; i < n; i++)
            CHECK_INT(j.counts[i], 1000);
        pool_free(p);
    }
    int lo, hi, total = 0;
    for (int i = 0; i < 3; i++) {
        pool_split(100, i, 3, 16, &lo, &hi);
        CHECK(lo % 16 == 0);
        total += hi - lo;
    }
    CHECK_INT(total, 100);
}

/* f32_to_f16_row (a cache's keys and values) has f32_to_f16's bits at
 * every level: ties to even, subnormals, past 65504, rows with a tail. */
static void test_half_row(void)
{
    enum { N = 4099 };
    static float f[N];
    static uint16_t row[N];
    int bad = 0;
    for (int i = 0; i < N; i++) {
        switch (i % 5) {
        case 0: f[i] = frand() * 4; break;
        case 1: f[i] = f16_to_f32((uint16_t)(i * 16)) * (1.0f + 0x1p-11f); break;    /* ties, and what is near them */
        case 2: f[i] = frand() * 0x1p-16f; break;                                   /* subnormal halves */
        case 3: f[i] = frand() * 1e5f; break;                                       /* some past 65504 */
        default: f[i] = f16_to_f32((uint16_t)(i * 13)) + 0x1p-24f * frand(); break;
        }
    }
    f32_to_f16_row(row, f, N);
    for (int i = 0; i < N; i++)
        bad += row[i] != f32_to_f16(f[i]) && !isnan(f[i]);
    CHECK_INT(bad, 0);
}

int main(void)
{
    /* the best level is in use from the start, before anyone sets one */
    CHECK_INT(kernels_level(), kernels_best_level());
    test_half();
    for (int level = (int)kernels_best_level(); level >= 0; level--) {
        kernels_set_level((kernel_level)level);
        CHECK_INT(kernels_level(), level);
        fprintf(stderr, "kernels: %s\n", kernels_level_name((kernel_level)level));
        test_half_row();
        test_matvec();
        test_matmat();
        test_values_n();
        test_layernorm_rows();
        test_attend_softmax();
        test_gelu_softmax();
        test_attend_query();
        test_skew();
        test_misc();
    }
    test_pool();
    return CHECK_DONE();
}
