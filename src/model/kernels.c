/* kernels.c: matvec, dot, attention and normalization kernels: AVX-512, AVX2 and scalar, chosen once as a table, plus naive twins. */
#include "model/kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "model/gguf.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KERNELS_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define KERNELS_X86 0
#endif

/* ------------------------------------------------------------------ levels */

kernel_level kernels_best_level(void)
{
#if KERNELS_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return KERNEL_AVX512;
    unsigned a, b, c, d;    /* F16C: CPUID.1:ECX bit 29 (not every compiler's builtin knows it) */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
        && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)))
        return KERNEL_AVX2;
#endif
    return KERNEL_SCALAR;
}

const char *kernels_level_name(kernel_level level)
{
    static const char *const names[] = { [KERNEL_SCALAR] = "scalar", [KERNEL_AVX2] = "avx2",
                                         [KERNEL_AVX512] = "avx512" };
    return (unsigned)level <= KERNEL_AVX512 ? names[level] : "scalar";
}

/* ------------------------------------------------------------------ half floats */

float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    float f;
    if (e == 0) {
        f = (float)man * 0x1p-24f;
        memcpy(&bits, &f, 4);
        bits |= sign;
    } else if (e == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((e + 112) << 23) | (man << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7fffffffu;
    if (a >= 0x7f800000u)                   /* inf, nan */
        return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0);
    if (a >= 0x477ff000u)                   /* rounds past 65504 */
        return sign | 0x7c00u;
    if (a < 0x38800000u) {                  /* below 2^-14: subnormal half */
        float af;
        memcpy(&af, &a, 4);
        return sign | (uint16_t)rintf(af * 0x1p24f);
    }
    uint32_t h = (((a >> 23) - 112) << 10) | ((a & 0x7fffffu) >> 13), rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return sign | (uint16_t)h;
}

/* ------------------------------------------------------------------ scalar kernels */

static void f16_row_scalar(float *out, const uint16_t *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = f16_to_f32(in[i]);
}

static float dot_scalar(const float *a, const float *b, int n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

static float dot_f16_scalar(const uint16_t *w, const float *x, int n)
{
    float s0 = 0, s1 = 0;
    int i = 0;
    for (; i + 2 <= n; i += 2) {
        s0 += f16_to_f32(w[i]) * x[i];
        s1 += f16_to_f32(w[i + 1]) * x[i + 1];
    }
    for (; i < n; i++)
        s0 += f16_to_f32(w[i]) * x[i];
    return s0 + s1;
}

static void axpy_scalar(float *y, float a, const float *x, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* One loop of rows per instruction set, so the table is read once per
 * matrix and the dot product is inlined. out[r - r0] = W[r] . x, rows LD
 * elements apart. */
#define MATVEC_LOOP(name, target, dotf, wtype)                                              \
    target static void name(float *out, const wtype *w, size_t ld, const float *x, int cols, \
                            int r0, int r1)                                                  \
    {                                                                                        \
        for (int r = r0; r < r1; r++)                                                        \
            out[r - r0] = dotf(w + (size_t)r * ld, x, cols);                                 \
    }

MATVEC_LOOP(rows_f32_scalar, , dot_scalar, float)
MATVEC_LOOP(rows_f16_scalar, , dot_f16_scalar, uint16_t)

/* out (dh) = sum_j p[j] V[j] over N rows LD floats apart. */
static void weighted_rows_scalar(float *out, const float *v, size_t ld, const float *p, int n, int dh)
{
    memset(out, 0, sizeof(float) * (size_t)dh);
    for (int j = 0; j < n; j++)
        for (int c = 0; c < dh; c++)
            out[c] += p[j] * v[(size_t)j * ld + (size_t)c];
}

/* ------------------------------------------------------------------ x86 kernels */

#if KERNELS_X86
__attribute__((target("avx2,fma,f16c")))
static void f16_row_avx2(float *out, const uint16_t *in, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + i))));
    for (; i < n; i++)
        out[i] = f16_to_f32(in[i]);
}
__attribute__((target("avx2,fma")))
static float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma")))
static float dot_avx2(const float *a, const float *b, int n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float s = hsum256(_mm256_add_ps(s0, s1));
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

__attribute__((target("avx2,fma,f16c")))
static float dot_f16_avx2(const uint16_t *w, const float *x, int n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i))),
                             _mm256_loadu_ps(x + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i + 8))),
                             _mm256_loadu_ps(x + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i))),
                             _mm256_loadu_ps(x + i), s0);
    float s = hsum256(_mm256_add_ps(s0, s1));
    for (; i < n; i++)
        s += f16_to_f32(w[i]) * x[i];
    return s;
}

__attribute__((target("avx512f")))
static float dot_avx512(const float *a, const float *b, int n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    }
    for (; i + 16 <= n; i += 16)
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

__attribute__((target("avx512f")))
static float dot_f16_avx512(const uint16_t *w, const float *x, int n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + i))),
                             _mm512_loadu_ps(x + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + i + 16))),
                             _mm512_loadu_ps(x + i + 16), s1);
    }
    for (; i + 16 <= n; i += 16)
        s0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + i))),
                             _mm512_loadu_ps(x + i), s0);
    float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    for (; i < n; i++)
        s += f16_to_f32(w[i]) * x[i];
    return s;
}

__attribute__((target("avx512f")))
static void axpy_avx512(float *y, float a, const float *x, int n)
{
    __m512 va = _mm512_set1_ps(a);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += a * x[i];
}

__attribute__((target("avx2,fma")))
static void axpy_avx2(float *y, float a, const float *x, int n)
{
    __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += a * x[i];
}

MATVEC_LOOP(rows_f32_avx2, __attribute__((target("avx2,fma"))), dot_avx2, float)
MATVEC_LOOP(rows_f16_avx2, __attribute__((target("avx2,fma,f16c"))), dot_f16_avx2, uint16_t)
MATVEC_LOOP(rows_f32_avx512, __attribute__((target("avx512f"))), dot_avx512, float)
MATVEC_LOOP(rows_f16_avx512, __attribute__((target("avx512f"))), dot_f16_avx512, uint16_t)

/* Accumulators stay in registers when dh <= 128 and a multiple of 16. */
__attribute__((target("avx512f")))
static void weighted_rows_avx512(float *out, const float *v, size_t ld, const float *p, int n, int dh)
{
    if (dh % 16 || dh > 128) {
        memset(out, 0, sizeof(float) * (size_t)dh);
        for (int j = 0; j < n; j++)
            axpy_avx512(out, p[j], v + (size_t)j * ld, dh);
        return;
    }
    __m512 acc[8];
    int nv = dh / 16;
    for (int k = 0; k < 8; k++)
        acc[k] = _mm512_setzero_ps();
    for (int j = 0; j < n; j++) {
        __m512 pj = _mm512_set1_ps(p[j]);
        const float *row = v + (size_t)j * ld;
        for (int k = 0; k < nv; k++)
            acc[k] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(row + 16 * k), acc[k]);
    }
    for (int k = 0; k < nv; k++)
        _mm512_storeu_ps(out + 16 * k, acc[k]);
}

__attribute__((target("avx2,fma")))
static void weighted_rows_avx2(float *out, const float *v, size_t ld, const float *p, int n, int dh)
{
    if (dh % 8 || dh > 64) {
        memset(out, 0, sizeof(float) * (size_t)dh);
        for (int j = 0; j < n; j++)
            axpy_avx2(out, p[j], v + (size_t)j * ld, dh);
        return;
    }
    __m256 acc[8];
    int nv = dh / 8;
    for (int k = 0; k < 8; k++)
        acc[k] = _mm256_setzero_ps();
    for (int j = 0; j < n; j++) {
        __m256 pj = _mm256_set1_ps(p[j]);
        const float *row = v + (size_t)j * ld;
        for (int k = 0; k < nv; k++)
            acc[k] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(row + 8 * k), acc[k]);
    }
    for (int k = 0; k < nv; k++)
        _mm256_storeu_ps(out + 8 * k, acc[k]);
}
#endif

/* ------------------------------------------------------------------ the table */

/* The fast kernels of one instruction-set level. */
typedef struct kernel_table {
    kernel_level level;
    void  (*f16_row)(float *out, const uint16_t *in, size_t n);
    float (*dot)(const float *a, const float *b, int n);
    void  (*axpy)(float *y, float a, const float *x, int n);
    void  (*rows_f32)(float *out, const float *w, size_t ld, const float *x, int cols, int r0, int r1);
    void  (*rows_f16)(float *out, const uint16_t *w, size_t ld, const float *x, int cols, int r0,
                      int r1);
    /* out (dh) = sum_j p[j] V[j] over N rows LD floats apart */
    void  (*weighted_rows)(float *out, const float *v, size_t ld, const float *p, int n, int dh);
} kernel_table;

static const kernel_table kernel_tables[] = {
    { KERNEL_SCALAR, f16_row_scalar, dot_scalar, axpy_scalar, rows_f32_scalar, rows_f16_scalar,
      weighted_rows_scalar },
#if KERNELS_X86
    { KERNEL_AVX2, f16_row_avx2, dot_avx2, axpy_avx2, rows_f32_avx2, rows_f16_avx2,
      weighted_rows_avx2 },
    { KERNEL_AVX512, f16_row_avx2, dot_avx512, axpy_avx512, rows_f32_avx512, rows_f16_avx512,
      weighted_rows_avx512 },
#endif
};

/* The table in use: the best this CPU has, chosen once when the program
 * starts (below); only kernels_set_level changes it.  Atomic so that pool
 * workers read it without a race; each kernel call reads it once. */
static _Atomic(const kernel_table *) kernels_in_use = &kernel_tables[KERNEL_SCALAR];

static inline const kernel_table *kernels(void)
{
    return atomic_load_explicit(&kernels_in_use, memory_order_relaxed);
}

void kernels_set_level(kernel_level level)
{
    kernel_level best = kernels_best_level();
    if ((unsigned)level > (unsigned)best)
        level = best;
    atomic_store_explicit(&kernels_in_use, &kernel_tables[level], memory_order_relaxed);
}

kernel_level kernels_level(void)
{
    return kernels()->level;
}

#if KERNELS_X86
/* Start-up: before main, so no caller ever runs on a table not chosen yet. */
__attribute__((constructor)) static void kernels_choose(void)
{
    kernels_set_level(kernels_best_level());
}
#endif

/* ------------------------------------------------------------------ entry points */

void f16_to_f32_row(float *out, const uint16_t *in, size_t n)
{
    kernels()->f16_row(out, in, n);
}

void matrix_row(float *out, const matrix *m, int r)
{
    if (m->type == GGML_TYPE_F16)
        f16_to_f32_row(out, (const uint16_t *)m->data + (size_t)r * m->cols, (size_t)m->cols);
    else
        memcpy(out, (const float *)m->data + (size_t)r * m->cols, sizeof(float) * (size_t)m->cols);
}

void matrix_to_f32(float *out, const matrix *m)
{
    size_t n = (size_t)m->rows * (size_t)m->cols;
    if (m->type == GGML_TYPE_F16)
        f16_to_f32_row(out, m->data, n);
    else
        memcpy(out, m->data, sizeof(float) * n);
}

float dot_f32(const float *a, const float *b, int n)
{
    return kernels()->dot(a, b, n);
}

void axpy_f32(float *y, float a, const float *x, int n)
{
    kernels()->axpy(y, a, x, n);
}

void matvec(float *out, const matrix *w, const float *x, int r0, int r1)
{
    if (w->type == GGML_TYPE_F16)
        kernels()->rows_f16(out, w->data, (size_t)w->cols, x, w->cols, r0, r1);
    else
        kernels()->rows_f32(out, w->data, (size_t)w->cols, x, w->cols, r0, r1);
}

void matvec_naive(float *out, const matrix *w, const float *x, int r0, int r1)
{
    for (int r = r0; r < r1; r++) {
        double s = 0;
        for (int c = 0; c < w->cols; c++) {
            size_t k = (size_t)r * (size_t)w->cols + (size_t)c;
            float wv = w->type == GGML_TYPE_F16 ? f16_to_f32(((const uint16_t *)w->data)[k])
                                                 : ((const float *)w->data)[k];
            s += (double)wv * x[c];
        }
        out[r - r0] = (float)s;
    }
}

/* ------------------------------------------------------------------ elementwise */

void layernorm(float *out, const float *x, const float *g, const float *b, int n, float eps)
{
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
        mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (x[i] - mean) * (x[i] - mean);
    var /= n;
    float inv = (float)(1.0 / sqrt(var + eps)), m = (float)mean;
    for (int i = 0; i < n; i++)
        out[i] = (x[i] - m) * inv * g[i] + b[i];
}

void gelu(float *x, int n)
{
    for (int i = 0; i < n; i++)
        x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

void softmax(float *x, int n)
{
    float mx = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > mx)
            mx = x[i];
    float sum = 0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < n; i++)
        x[i] *= inv;
}

/* ------------------------------------------------------------------ attention */

void attend_query(float *out, const float *q, const float *k, const float *v, int ld,
                  int n_keys, int newest, const matrix *er, int dh, float scale, float *scores,
                  float *rel)
{
    int m = n_keys < er->rows ? n_keys : er->rows;
    matvec(rel, er, q, 0, m);                       /* rel[d] = q . E[d] */
    const kernel_table *kt = kernels();
    kt->rows_f32(scores, k, (size_t)ld, q, dh, 0, n_keys); /* scores[j] = q . k_j */
    /* distance d sits in row newest - d, wrapping past row 0 to the end */
    int wrap = m < newest + 1 ? m : newest + 1;
    for (int d = 0; d < wrap; d++)
        scores[newest - d] += rel[d];
    for (int d = wrap; d < m; d++)
        scores[n_keys + newest - d] += rel[d];
    for (int j = 0; j < n_keys; j++)
        scores[j] *= scale;
    softmax(scores, n_keys);
    kt->weighted_rows(out, v, (size_t)ld, scores, n_keys, dh);
}

void attend_query_naive(float *out, const float *q, const float *k, const float *v, int ld,
                        int n_keys, int newest, const matrix *er, int dh, float scale, float *scores)
{
    for (int j = 0; j < n_keys; j++) {
        int dist = ((newest - j) % n_keys + n_keys) % n_keys;
        double s = 0;
        for (int c = 0; c < dh; c++) {
            double e = 0;
            if (dist < er->rows) {
                size_t idx = (size_t)dist * (size_t)dh + (size_t)c;
                e = er->type == GGML_TYPE_F16 ? f16_to_f32(((const uint16_t *)er->data)[idx])
                                              : ((const float *)er->data)[idx];
            }
            s += (double)q[c] * (k[(size_t)j * (size_t)ld + (size_t)c] + e);
        }
        scores[j] = (float)(s * scale);
    }
    double mx = scores[0], sum = 0;
    for (int j = 1; j < n_keys; j++)
        mx = scores[j] > mx ? scores[j] : mx;
    for (int j = 0; j < n_keys; j++)
        sum += exp(scores[j] - mx);
    for (int c = 0; c < dh; c++) {
        double o = 0;
        for (int j = 0; j < n_keys; j++)
            o += exp(scores[j] - mx) / sum * v[(size_t)j * (size_t)ld + (size_t)c];
        out[c] = (float)o;
    }
}

void rel_softmax_rows(float *S, const float *R, int L, int m, float scale, int i0, int i1)
{
    for (int i = i0; i < i1; i++) {
        float *row = S + (size_t)i * (size_t)L;
        const float *r = R + (size_t)i * (size_t)m;   /* r[d]: q_i . E[d] */
        int jlo = i - m + 1;                            /* keys with distance < m */
        if (jlo < 0)
            jlo = 0;
        for (int j = 0; j < jlo; j++)
            row[j] *= scale;
        for (int j = jlo; j <= i; j++)
            row[j] = (row[j] + r[i - j]) * scale;
        softmax(row, i + 1);
        if (i + 1 < L)
            memset(row + i + 1, 0, sizeof(float) * (size_t)(L - i - 1));
    }
}

void rel_probs_naive(float *P, const float *q, const float *k, int ld, const float *er,
                     int max_rel, int L, int dh, float scale)
{
    for (int i = 0; i < L; i++) {
        float *row = P + (size_t)i * (size_t)L;
        for (int j = 0; j < L; j++) {
            if (j > i) {
                row[j] = 0;
                continue;
            }
            double s = 0;
            for (int c = 0; c < dh; c++) {
                double e = i - j < max_rel ? er[(size_t)(i - j) * (size_t)dh + (size_t)c] : 0.0;
                s += (double)q[(size_t)i * (size_t)ld + (size_t)c] * (k[(size_t)j * (size_t)ld + (size_t)c] + e);
            }
            row[j] = (float)(s * scale);
        }
        double mx = row[0], sum = 0;
        for (int j = 1; j <= i; j++)
            mx = row[j] > mx ? row[j] : mx;
        for (int j = 0; j <= i; j++)
            sum += exp(row[j] - mx);
        for (int j = 0; j <= i; j++)
            row[j] = (float)(exp(row[j] - mx) / sum);
    }
}
