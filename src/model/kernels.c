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

static void f32_to_f16_row_scalar(uint16_t *out, const float *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = f32_to_f16(in[i]);
}

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

/* W . x for half-float and int8 weights (an int8 row's scale is applied by
 * the caller), two chains. */
#define DOT2_SCALAR(name, wtype, TOF)                                                              \
    static float name(const wtype *w, const float *x, int n)                                       \
    {                                                                                              \
        float s0 = 0, s1 = 0;                                                                      \
        int i = 0;                                                                                 \
        for (; i + 2 <= n; i += 2) {                                                               \
            s0 += TOF(w[i]) * x[i];                                                                \
            s1 += TOF(w[i + 1]) * x[i + 1];                                                        \
        }                                                                                          \
        for (; i < n; i++)                                                                         \
            s0 += TOF(w[i]) * x[i];                                                                \
        return s0 + s1;                                                                            \
    }

DOT2_SCALAR(dot_f16_scalar, uint16_t, f16_to_f32)
DOT2_SCALAR(dot_i8_scalar, int8_t, (float))

static void axpy_scalar(float *y, float a, const float *x, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* One loop of rows per instruction set, so the table is read once per
 * matrix and the dot product is inlined: out[b * ldo + r - r0] = W[r] . x_b
 * for the NB vectors x_b = X + b * ldx, rows LD elements apart.  Every
 * level's batch gives each dot product exactly the bits its own dot
 * function gives it alone, so a batch of one is matvec. */
#define ROWS_EACH(name, target, dotf, wtype)                                                       \
    target static void name(float *out, size_t ldo, const wtype *w, size_t ld, const float *x,     \
                            size_t ldx, int cols, int nb, int r0, int r1)                          \
    {                                                                                              \
        for (int b = 0; b < nb; b++)                                                               \
            for (int r = r0; r < r1; r++)                                                          \
                out[(size_t)b * ldo + (size_t)(r - r0)] = dotf(w + (size_t)r * ld, x + (size_t)b * ldx, cols); \
    }

ROWS_EACH(rows_f32_scalar, , dot_scalar, float)
ROWS_EACH(rows_f16_scalar, , dot_f16_scalar, uint16_t)
ROWS_EACH(rows_i8_scalar, , dot_i8_scalar, int8_t)

/* out (dh) += sum_j p[j] V[j] over N rows (half floats) LD apart, j in
 * order: a sum split into runs of rows has the bits of one pass over them
 * all. */
static void weighted_rows_scalar(float *out, const uint16_t *v, size_t ld, const float *p, int n, int dh)
{
    for (int j = 0; j < n; j++)
        for (int c = 0; c < dh; c++)
            out[c] += p[j] * f16_to_f32(v[(size_t)j * ld + (size_t)c]);
}

/* Exact GELU with the C library's erf; the vector levels use erf_*'s
 * approximation (PyTorch's own on these CPUs). */
static void gelu_scalar(float *x, int n)
{
    for (int i = 0; i < n; i++)
        x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

static void softmax_scalar(float *x, int n)
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

/* ------------------------------------------------------------------ x86 kernels */

#if KERNELS_X86
/* F16C rounds to nearest even, as f32_to_f16 does. */
__attribute__((target("avx2,fma,f16c")))
static void f32_to_f16_row_avx2(uint16_t *out, const float *in, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++)
        out[i] = f32_to_f16(in[i]);
}

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

/* The weight loads and conversions of each element type, 8 and 16 at a
 * time, and one weight as a float (the tails). */
#define LOAD8_F32(p)  _mm256_loadu_ps(p)
#define LOAD8_F16(p)  _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define LOAD8_I8(p)   _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p))))
#define LOAD16_F32(p) _mm512_loadu_ps(p)
#define LOAD16_F16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define LOAD16_I8(p)  _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p))))
#define TO_F32(w)     (w)
#define F16_TO_F32(w) f16_to_f32(w)
#define I8_TO_F32(w)  ((float)(w))

/* W . x, two chains of eight (s0 over columns 0-7, 16-23, ...; s1 over
 * 8-15, ...), then the tail one by one. */
#define DOT_AVX2(name, target, wtype, LOADW, TOF)                                                  \
    target static float name(const wtype *w, const float *x, int n)                                \
    {                                                                                              \
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();                                 \
        int i = 0;                                                                                 \
        for (; i + 16 <= n; i += 16) {                                                             \
            s0 = _mm256_fmadd_ps(LOADW(w + i), _mm256_loadu_ps(x + i), s0);                        \
            s1 = _mm256_fmadd_ps(LOADW(w + i + 8), _mm256_loadu_ps(x + i + 8), s1);                \
        }                                                                                          \
        for (; i + 8 <= n; i += 8)                                                                 \
            s0 = _mm256_fmadd_ps(LOADW(w + i), _mm256_loadu_ps(x + i), s0);                        \
        float s = hsum256(_mm256_add_ps(s0, s1));                                                  \
        for (; i < n; i++)                                                                         \
            s += TOF(w[i]) * x[i];                                                                 \
        return s;                                                                                  \
    }

DOT_AVX2(dot_avx2, __attribute__((target("avx2,fma"))), float, LOAD8_F32, TO_F32)
DOT_AVX2(dot_f16_avx2, __attribute__((target("avx2,fma,f16c"))), uint16_t, LOAD8_F16, F16_TO_F32)
DOT_AVX2(dot_i8_avx2, __attribute__((target("avx2,fma"))), int8_t, LOAD8_I8, I8_TO_F32)

/* The sum of V's lanes in GCC's _mm512_reduce_add_ps order (lane i with
 * i+8, then i+4, i+2, i+1), spelled out so that hsum512x8 below can give
 * the same bits whatever compiler builds it. */
__attribute__((target("avx512f")))
static inline float hsum512(__m512 v)
{
    __m256 t3 = _mm256_add_ps(_mm512_castps512_ps256(v),
                              _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 t6 = _mm_add_ps(_mm256_castps256_ps128(t3), _mm256_extractf128_ps(t3, 1));
    __m128 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(t8) + _mm_cvtss_f32(_mm_shuffle_ps(t8, t8, 1));
}

/* hsum512(V[k]) for eight vectors at once, as one vector: lane k is
 * V[k]'s sum.  The same pairs added at each level, two vectors to a
 * register, so 8 sums cost 4 levels of shuffles instead of 8 reductions,
 * and a caller stores them as one run. */
__attribute__((target("avx512f")))
static inline __m256 hsum512x8(const __m512 v[8])
{
    __m512 w[4], x[2];
    for (int m = 0; m < 4; m++)     /* lanes i + (i+8): v[2m] in lanes 0-7, v[2m+1] in 8-15 */
        w[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int n = 0; n < 2; n++)     /* + (i+4): block k of x[n] is v[4n+k] */
        x[n] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * n], w[2 * n + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(w[2 * n], w[2 * n + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    /* + (i+2): block k holds v[k] in lanes 0-1 and v[4+k] in lanes 2-3 */
    __m512 y = _mm512_add_ps(_mm512_shuffle_ps(x[0], x[1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(x[0], x[1], _MM_SHUFFLE(3, 2, 3, 2)));
    /* + (i+1): block k lane 0 is v[k]'s sum, lane 1 v[4+k]'s */
    __m512 z = _mm512_add_ps(_mm512_shuffle_ps(y, y, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_ps(y, y, _MM_SHUFFLE(3, 1, 3, 1)));
    /* v[k]'s sum (lane 4k for k < 4, lane 4(k-4) + 1 after) to lane k */
    __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castps512_ps256(_mm512_permutexvar_ps(order, z));
}

/* hsum512(V[t]) for sixteen vectors at once, as one vector: the same
 * pairs added at each level (lanes i + (i+8), then i+4, i+2, i+1), two to
 * sixteen vectors to a register.  Lane 4k + m of the result is V[4m + k]'s
 * sum, so a caller that puts row 4k + m in V[4m + k] gets the sixteen rows'
 * sums in order. */
__attribute__((target("avx512f")))
static inline __m512 hsum512x16(const __m512 v[16])
{
    __m512 w[8], x[4], y[2];
    for (int m = 0; m < 8; m++)     /* + (i+8): v[2m]'s in lanes 0-7, v[2m+1]'s in 8-15 */
        w[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int n = 0; n < 4; n++)     /* + (i+4): block k of x[n] is v[4n+k]'s */
        x[n] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * n], w[2 * n + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(w[2 * n], w[2 * n + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int n = 0; n < 2; n++)     /* + (i+2): block k: lanes 0-1 v[8n+k]'s, 2-3 v[8n+4+k]'s */
        y[n] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * n], x[2 * n + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(x[2 * n], x[2 * n + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    /* + (i+1): block k is v[k], v[4+k], v[8+k], v[12+k]'s sums */
    return _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* dot_avx2's steps sixteen at a time (s0: columns 0-15, 32-47, ...),
 * reduced by hsum512. */
#define DOT_AVX512(name, wtype, LOADW, TOF)                                                        \
    __attribute__((target("avx512f"))) static float name(const wtype *w, const float *x, int n)    \
    {                                                                                              \
        __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();                                 \
        int i = 0;                                                                                 \
        for (; i + 32 <= n; i += 32) {                                                             \
            s0 = _mm512_fmadd_ps(LOADW(w + i), _mm512_loadu_ps(x + i), s0);                        \
            s1 = _mm512_fmadd_ps(LOADW(w + i + 16), _mm512_loadu_ps(x + i + 16), s1);              \
        }                                                                                          \
        for (; i + 16 <= n; i += 16)                                                               \
            s0 = _mm512_fmadd_ps(LOADW(w + i), _mm512_loadu_ps(x + i), s0);                        \
        float s = hsum512(_mm512_add_ps(s0, s1));                                                  \
        for (; i < n; i++)                                                                         \
            s += TOF(w[i]) * x[i];                                                                 \
        return s;                                                                                  \
    }

DOT_AVX512(dot_avx512, float, LOAD16_F32, TO_F32)
DOT_AVX512(dot_f16_avx512, uint16_t, LOAD16_F16, F16_TO_F32)
DOT_AVX512(dot_i8_avx512, int8_t, LOAD16_I8, I8_TO_F32)

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


/* AVX2: each row is loaded (and converted) once for up to 4 vectors; each
 * dot product is dot_avx2's / dot_f16_avx2's, step for step.  The group's
 * size G is a constant in each of the four copies the inline helper makes
 * (4, 3, 2, 1), so that its 2 x G sums stay in registers: with G read at
 * run time they lived on the stack, and a batch of 4 cost 4 times one;
 * GCC unrolls the loops over the group only when told to at -O2). */
#define UNROLL4 _Pragma("GCC unroll 4")
#define ROWS_AVX2(name, target, wtype, LOADW, TOF, dotf)                                           \
    target __attribute__((always_inline)) static inline void name##_g(                             \
        float *out, size_t ldo, const wtype *w, size_t ld, const float *x, size_t ldx, int cols,   \
        int g, int r0, int r1)                                                                     \
    {                                                                                              \
        for (int r = r0; r < r1; r++) {                                                            \
            const wtype *wr = w + (size_t)r * ld;                                                  \
            __m256 s0[4], s1[4];                                                                   \
            UNROLL4 for (int b = 0; b < g; b++)                                                            \
                s0[b] = s1[b] = _mm256_setzero_ps();                                               \
            int i = 0;                                                                             \
            for (; i + 16 <= cols; i += 16) {                                                      \
                __m256 w0 = LOADW(wr + i), w1 = LOADW(wr + i + 8);                                 \
                UNROLL4 for (int b = 0; b < g; b++) {                                                      \
                    const float *xb = x + (size_t)b * ldx + i;                                     \
                    s0[b] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xb), s0[b]);                       \
                    s1[b] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xb + 8), s1[b]);                   \
                }                                                                                  \
            }                                                                                      \
            for (; i + 8 <= cols; i += 8) {                                                        \
                __m256 w0 = LOADW(wr + i);                                                         \
                UNROLL4 for (int b = 0; b < g; b++)                                                        \
                    s0[b] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + (size_t)b * ldx + i), s0[b]);  \
            }                                                                                      \
            UNROLL4 for (int b = 0; b < g; b++) {                                                          \
                const float *xb = x + (size_t)b * ldx;                                             \
                float s = hsum256(_mm256_add_ps(s0[b], s1[b]));                                    \
                for (int t = i; t < cols; t++)                                                     \
                    s += TOF(wr[t]) * xb[t];                                                       \
                out[(size_t)b * ldo + (size_t)(r - r0)] = s;                                       \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    target static void name(float *out, size_t ldo, const wtype *w, size_t ld, const float *x,     \
                            size_t ldx, int cols, int nb, int r0, int r1)                          \
    {                                                                                              \
        if (nb == 1) {                                                                             \
            for (int r = r0; r < r1; r++)                                                          \
                out[r - r0] = dotf(w + (size_t)r * ld, x, cols);                                   \
            return;                                                                                \
        }                                                                                          \
        for (int b0 = 0; b0 < nb; b0 += 4) {                                                       \
            float *o = out + (size_t)b0 * ldo;                                                     \
            const float *xg = x + (size_t)b0 * ldx;                                                \
            switch (nb - b0 < 4 ? nb - b0 : 4) {                                                   \
            case 4: name##_g(o, ldo, w, ld, xg, ldx, cols, 4, r0, r1); break;                      \
            case 3: name##_g(o, ldo, w, ld, xg, ldx, cols, 3, r0, r1); break;                      \
            case 2: name##_g(o, ldo, w, ld, xg, ldx, cols, 2, r0, r1); break;                      \
            default: name##_g(o, ldo, w, ld, xg, ldx, cols, 1, r0, r1); break;                     \
            }                                                                                      \
        }                                                                                          \
    }

ROWS_AVX2(rows_f32_avx2, __attribute__((target("avx2,fma"))), float, LOAD8_F32, TO_F32, dot_avx2)
ROWS_AVX2(rows_f16_avx2, __attribute__((target("avx2,fma,f16c"))), uint16_t, LOAD8_F16, F16_TO_F32, dot_f16_avx2)
ROWS_AVX2(rows_i8_avx2, __attribute__((target("avx2,fma"))), int8_t, LOAD8_I8, I8_TO_F32, dot_i8_avx2)

/* AVX-512: eight dot products at a time, G vectors (8, 4, 2 or 1) times
 * 8/G rows, each row loaded once for its G vectors and the eight sums
 * reduced together (hsum512x8).  Each dot product is dot_avx512's /
 * dot_f16_avx512's, step for step: the same fused multiply-adds in the
 * same order and the same reduction tree.  One vector (matvec) goes this
 * way; batches take dots16w below. */
#define DOTS8_AVX512(name, wtype, LOADW, TOF)                                                      \
    __attribute__((target("avx512f"), always_inline)) static inline void name(                     \
        float *out, size_t ldo, const wtype *w, size_t ld, const float *x, size_t ldx, int cols,   \
        const int g, int b0, int r, int r0)                                                        \
    {                                                                                              \
        const int nr = 8 / g;                                                                      \
        __m512 s0[8], s1[8], v[8];                                                                 \
        _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) s0[k] = s1[k] = _mm512_setzero_ps();   \
        int i = 0;                                                                                 \
        for (; i + 32 <= cols; i += 32) {                                                          \
            _Pragma("GCC unroll 8") for (int a = 0; a < nr; a++) {                                 \
                const wtype *wr = w + (size_t)(r + a) * ld + i;                                    \
                __m512 w0 = LOADW(wr), w1 = LOADW(wr + 16);                                        \
                _Pragma("GCC unroll 8") for (int b = 0; b < g; b++) {                              \
                    const float *xb = x + (size_t)(b0 + b) * ldx + i;                              \
                    s0[a * g + b] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xb), s0[a * g + b]);       \
                    s1[a * g + b] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xb + 16), s1[a * g + b]);  \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (; i + 16 <= cols; i += 16) {                                                          \
            _Pragma("GCC unroll 8") for (int a = 0; a < nr; a++) {                                 \
                __m512 w0 = LOADW(w + (size_t)(r + a) * ld + i);                                   \
                _Pragma("GCC unroll 8") for (int b = 0; b < g; b++) s0[a * g + b] =                \
                    _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + (size_t)(b0 + b) * ldx + i), s0[a * g + b]); \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) v[k] = _mm512_add_ps(s0[k], s1[k]);    \
        __m256 run = hsum512x8(v);                                                                 \
        if (g == 1 && i == cols) {      /* one vector's eight rows, no tail: stored as a run */    \
            _mm256_storeu_ps(out + (size_t)b0 * ldo + (size_t)(r - r0), run);                      \
            return;                                                                                \
        }                                                                                          \
        float sums[8];                                                                             \
        _mm256_storeu_ps(sums, run);                                                               \
        for (int a = 0; a < nr; a++)                                                               \
            for (int b = 0; b < g; b++) {                                                          \
                const wtype *wr = w + (size_t)(r + a) * ld;                                        \
                const float *xb = x + (size_t)(b0 + b) * ldx;                                      \
                float s = sums[a * g + b];                                                         \
                for (int t = i; t < cols; t++)                                                     \
                    s += TOF(wr[t]) * xb[t];                                                       \
                out[(size_t)(b0 + b) * ldo + (size_t)(r + a - r0)] = s;                            \
            }                                                                                      \
    }

/* A batch's long rows (the weight matrices): sixteen dot products at a
 * time, G vectors (8, 4 or 2) times 16/G rows.  dot_avx512's two sums
 * (s0 over columns 0-15, 32-47, ...; s1 over 16-31, 48-63, ...) are
 * separate chains, so all sixteen s0 chains run first and then all
 * sixteen s1 chains: each pass loads the G vectors' sixteen columns once
 * per step for all the rows, and a row's half of them once for all the
 * vectors, 16 sums in registers.  Each dot product is dot_avx512's /
 * dot_f16_avx512's, step for step; the sixteen are reduced together
 * (hsum512x16) with each vector's NR sums in adjacent lanes, copied out
 * as one run per vector. */
#define DOTS16W_AVX512(name, wtype, LOADW, TOF, G)                                                 \
    __attribute__((target("avx512f"))) static int name(float *out, size_t ldo, const wtype *w,     \
                                                       size_t ld, const float *x, size_t ldx,      \
                                                       int cols, int b0, int r, int r1, int r0)    \
    {                                                                                              \
        enum { NR = 16 / G };                                                                      \
        int tail = cols / 16 * 16;                      /* scalar columns from here on */          \
        for (; r + NR <= r1; r += NR) {                                                            \
            __m512 s0[16], s1[16], v[16];                                                          \
            _Pragma("GCC unroll 2") for (int pass = 0; pass < 2; pass++) {                         \
                __m512 *s = pass ? s1 : s0;     /* s0: columns 0-15, 32-47, ...; s1: 16-31, ... */ \
                _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++) s[k] = _mm512_setzero_ps();  \
                for (int i = 16 * pass; i + 16 <= cols; i += 32) {                                 \
                    __m512 xv[G];                                                                  \
                    _Pragma("GCC unroll 8") for (int b = 0; b < G; b++)                            \
                        xv[b] = _mm512_loadu_ps(x + (size_t)(b0 + b) * ldx + i);                   \
                    _Pragma("GCC unroll 16") for (int a = 0; a < NR; a++) {                        \
                        __m512 wa = LOADW(w + (size_t)(r + a) * ld + i);                           \
                        _Pragma("GCC unroll 8") for (int b = 0; b < G; b++)                        \
                            s[a * G + b] = _mm512_fmadd_ps(wa, xv[b], s[a * G + b]);               \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            /* s[a G + b] (row a, vector b) to lane b NR + a: hsum512x16's lane 4k + m is v[4m + k] */ \
            _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++) {                                \
                int lane = (k % G) * NR + k / G;                                                   \
                v[4 * (lane % 4) + lane / 4] = _mm512_add_ps(s0[k], s1[k]);                        \
            }                                                                                      \
            float sums[16];                                                                        \
            _mm512_storeu_ps(sums, hsum512x16(v));                                                 \
            _Pragma("GCC unroll 8") for (int b = 0; b < G; b++)     /* vector b's NR rows */       \
                memcpy(out + (size_t)(b0 + b) * ldo + (size_t)(r - r0), sums + b * NR, sizeof(float) * NR); \
            for (int k = 0; k < 16 && tail < cols; k++) {                                          \
                const wtype *wr = w + (size_t)(r + k / G) * ld;                                    \
                const float *xb = x + (size_t)(b0 + k % G) * ldx;                                  \
                float *o = out + (size_t)(b0 + k % G) * ldo + (size_t)(r + k / G - r0);            \
                for (int t = tail; t < cols; t++)                                                  \
                    *o += TOF(wr[t]) * xb[t];                                                      \
            }                                                                                      \
        }                                                                                          \
        return r;                                                                                  \
    }

/* Short rows (attention's: d_head columns), sixteen dot products of one
 * vector at a time, OUT[t] = W[R + t] . X for t < 16: each is
 * dot_avx512's / dot_f16_avx512's, step for step (COLS a multiple of 16),
 * and the sixteen are reduced together into one vector (hsum512x16)
 * instead of one sum at a time. */
#define DOTS16_AVX512(name, wtype, LOADW)                                                          \
    __attribute__((target("avx512f"), always_inline)) static inline void name(                     \
        float *out, const wtype *w, size_t ld, const float *x, int cols, int r)                    \
    {                                                                                              \
        __m512 v[16];                                                                              \
        _Pragma("GCC unroll 16") for (int s = 0; s < 16; s++) {                                    \
            const wtype *wr = w + (size_t)(r + 4 * (s % 4) + s / 4) * ld;                          \
            __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();                             \
            int i = 0;                                                                             \
            for (; i + 32 <= cols; i += 32) {                                                      \
                s0 = _mm512_fmadd_ps(LOADW(wr + i), _mm512_loadu_ps(x + i), s0);                   \
                s1 = _mm512_fmadd_ps(LOADW(wr + i + 16), _mm512_loadu_ps(x + i + 16), s1);         \
            }                                                                                      \
            if (i < cols)                                                                          \
                s0 = _mm512_fmadd_ps(LOADW(wr + i), _mm512_loadu_ps(x + i), s0);                   \
            v[s] = _mm512_add_ps(s0, s1);                                                          \
        }                                                                                          \
        _mm512_storeu_ps(out, hsum512x16(v));                                                      \
    }

/* dots16 for two vectors X0 and X1 and eight rows: OUT0[t] = W[R + t] . X0
 * and OUT1[t] = W[R + t] . X1 for t < 8, each row loaded (and widened)
 * once for both; every dot product is dots16's, step for step. */
#define DOTS16Q2_AVX512(name, wtype, LOADW)                                                        \
    __attribute__((target("avx512f"), always_inline)) static inline void name(                     \
        float *out0, float *out1, const wtype *w, size_t ld, const float *x0, const float *x1,     \
        int cols, int r)                                                                           \
    {                                                                                              \
        __m512 v[16];                                                                              \
        _Pragma("GCC unroll 8") for (int t = 0; t < 8; t++) {                                      \
            const wtype *wr = w + (size_t)(r + t) * ld;                                            \
            __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();                             \
            __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();                             \
            int i = 0;                                                                             \
            for (; i + 32 <= cols; i += 32) {                                                      \
                __m512 w0 = LOADW(wr + i), w1 = LOADW(wr + i + 16);                                \
                a0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x0 + i), a0);                             \
                a1 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x0 + i + 16), a1);                        \
                b0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x1 + i), b0);                             \
                b1 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x1 + i + 16), b1);                        \
            }                                                                                      \
            if (i < cols) {                                                                        \
                __m512 w0 = LOADW(wr + i);                                                         \
                a0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x0 + i), a0);                             \
                b0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x1 + i), b0);                             \
            }                                                                                      \
            /* lane 4k + m of hsum512x16 is v[4m + k]'s: X0's row t to lane t, X1's to 8 + t */    \
            v[4 * (t % 4) + t / 4] = _mm512_add_ps(a0, a1);                                        \
            v[4 * (t % 4) + 2 + t / 4] = _mm512_add_ps(b0, b1);                                    \
        }                                                                                          \
        __m512 s = hsum512x16(v);                                                                  \
        _mm256_storeu_ps(out0, _mm512_castps512_ps256(s));                                         \
        _mm256_storeu_ps(out1, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));  \
    }

/* Columns up to which rows are taken sixteen at a time, one vector after
 * another (dots16); longer rows (the weight matrices) take dots16w for
 * two or more vectors, dots8 for one. */
#define DOTS16_MAX_COLS 128

#define ROWS_AVX512(name, dots8, dots16w, dots16, dots16q2, wtype, dotf)                           \
    __attribute__((target("avx512f"))) static void name(float *out, size_t ldo, const wtype *w,    \
                                                        size_t ld, const float *x, size_t ldx,     \
                                                        int cols, int nb, int r0, int r1)          \
    {                                                                                              \
        int rs = r0;                                                                               \
        if (cols % 16 == 0 && cols <= DOTS16_MAX_COLS) {                                           \
            for (; rs + 16 <= r1; rs += 16) {  /* each block of rows stays in L1 for every vector */ \
                int b = 0;                                                                         \
                for (; b + 2 <= nb; b += 2) {   /* two vectors per load of a row */                \
                    float *o0 = out + (size_t)b * ldo + (size_t)(rs - r0), *o1 = o0 + ldo;         \
                    const float *x0 = x + (size_t)b * ldx, *x1 = x0 + ldx;                         \
                    for (int h = 0; h < 16; h += 8)     /* d_head 64 as a constant, as dots16 */   \
                        if (cols == 64)                                                            \
                            dots16q2(o0 + h, o1 + h, w, ld, x0, x1, 64, rs + h);                   \
                        else                                                                       \
                            dots16q2(o0 + h, o1 + h, w, ld, x0, x1, cols, rs + h);                 \
                }                                                                                  \
                for (; b < nb; b++) {                                                              \
                    float *o = out + (size_t)b * ldo + (size_t)(rs - r0);                          \
                    if (cols == 64)     /* d_head 64: the loops unrolled, x in registers */        \
                        dots16(o, w, ld, x + (size_t)b * ldx, 64, rs);                             \
                    else                                                                           \
                        dots16(o, w, ld, x + (size_t)b * ldx, cols, rs);                           \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (int b0 = 0; b0 < nb;) {                                                               \
            int left = nb - b0, g = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1, r = rs;     \
            if (g == 1)                                                                            \
                for (; r + 8 <= r1; r += 8)                                                        \
                    dots8(out, ldo, w, ld, x, ldx, cols, 1, b0, r, r0);                            \
            else if (g == 8)                                                                       \
                r = dots16w##8(out, ldo, w, ld, x, ldx, cols, b0, r, r1, r0);                      \
            else if (g == 4)                                                                       \
                r = dots16w##4(out, ldo, w, ld, x, ldx, cols, b0, r, r1, r0);                      \
            else                                                                                   \
                r = dots16w##2(out, ldo, w, ld, x, ldx, cols, b0, r, r1, r0);                      \
            for (; r < r1; r++)                                                                    \
                for (int b = b0; b < b0 + g; b++)                                                  \
                    out[(size_t)b * ldo + (size_t)(r - r0)] =                                      \
                        dotf(w + (size_t)r * ld, x + (size_t)b * ldx, cols);                       \
            b0 += g;                                                                               \
        }                                                                                          \
    }

DOTS8_AVX512(dots8_f32_avx512, float, LOAD16_F32, TO_F32)
DOTS8_AVX512(dots8_f16_avx512, uint16_t, LOAD16_F16, F16_TO_F32)
DOTS16W_AVX512(dots16w_f32_avx512_8, float, LOAD16_F32, TO_F32, 8)
DOTS16W_AVX512(dots16w_f32_avx512_4, float, LOAD16_F32, TO_F32, 4)
DOTS16W_AVX512(dots16w_f32_avx512_2, float, LOAD16_F32, TO_F32, 2)
DOTS16W_AVX512(dots16w_f16_avx512_8, uint16_t, LOAD16_F16, F16_TO_F32, 8)
DOTS16W_AVX512(dots16w_f16_avx512_4, uint16_t, LOAD16_F16, F16_TO_F32, 4)
DOTS16W_AVX512(dots16w_f16_avx512_2, uint16_t, LOAD16_F16, F16_TO_F32, 2)
DOTS16_AVX512(dots16_f32_avx512, float, LOAD16_F32)
DOTS16_AVX512(dots16_f16_avx512, uint16_t, LOAD16_F16)
DOTS16Q2_AVX512(dots16q2_f32_avx512, float, LOAD16_F32)
DOTS16Q2_AVX512(dots16q2_f16_avx512, uint16_t, LOAD16_F16)
ROWS_AVX512(rows_f32_avx512, dots8_f32_avx512, dots16w_f32_avx512_, dots16_f32_avx512, dots16q2_f32_avx512, float,
            dot_avx512)
ROWS_AVX512(rows_f16_avx512, dots8_f16_avx512, dots16w_f16_avx512_, dots16_f16_avx512, dots16q2_f16_avx512, uint16_t,
            dot_f16_avx512)
DOTS8_AVX512(dots8_i8_avx512, int8_t, LOAD16_I8, I8_TO_F32)
DOTS16W_AVX512(dots16w_i8_avx512_8, int8_t, LOAD16_I8, I8_TO_F32, 8)
DOTS16W_AVX512(dots16w_i8_avx512_4, int8_t, LOAD16_I8, I8_TO_F32, 4)
DOTS16W_AVX512(dots16w_i8_avx512_2, int8_t, LOAD16_I8, I8_TO_F32, 2)
DOTS16_AVX512(dots16_i8_avx512, int8_t, LOAD16_I8)
DOTS16Q2_AVX512(dots16q2_i8_avx512, int8_t, LOAD16_I8)
ROWS_AVX512(rows_i8_avx512, dots8_i8_avx512, dots16w_i8_avx512_, dots16_i8_avx512, dots16q2_i8_avx512, int8_t,
            dot_i8_avx512)

/* Accumulators stay in registers when dh <= 128 and a multiple of 16. */
__attribute__((target("avx512f")))
static void weighted_rows_avx512(float *out, const uint16_t *v, size_t ld, const float *p, int n, int dh)
{
    if (dh % 16 || dh > 128) {
        weighted_rows_scalar(out, v, ld, p, n, dh);
        return;
    }
    __m512 acc[8];
    int nv = dh / 16;
    for (int k = 0; k < nv; k++)
        acc[k] = _mm512_loadu_ps(out + 16 * k);
    for (int j = 0; j < n; j++) {
        __m512 pj = _mm512_set1_ps(p[j]);
        const uint16_t *row = v + (size_t)j * ld;
        for (int k = 0; k < nv; k++)
            acc[k] = _mm512_fmadd_ps(pj, LOAD16_F16(row + 16 * k), acc[k]);
    }
    for (int k = 0; k < nv; k++)
        _mm512_storeu_ps(out + 16 * k, acc[k]);
}

/* weighted_rows for G queries (P + b LDP, OUT + b LDO) over the same rows
 * of 16 NV floats: each row is loaded once for all of them, and the G NV
 * sums, each a chain over j in order (weighted_rows_avx512's bits), run
 * side by side instead of one query's few chains waiting on each other. */
__attribute__((target("avx512f"), always_inline))
static inline void weighted_group_avx512(float *out, size_t ldo, const uint16_t *v, size_t ld, const float *p, size_t ldp,
                                         int n, const int g, const int nv)
{
    __m512 acc[16], row[8];
    for (int b = 0; b < g; b++)
        for (int k = 0; k < nv; k++)
            acc[b * nv + k] = _mm512_loadu_ps(out + (size_t)b * ldo + 16 * k);
    for (int j = 0; j < n; j++) {
        for (int k = 0; k < nv; k++)
            row[k] = LOAD16_F16(v + (size_t)j * ld + 16 * k);
        for (int b = 0; b < g; b++) {
            __m512 pj = _mm512_set1_ps(p[(size_t)b * ldp + (size_t)j]);
            for (int k = 0; k < nv; k++)
                acc[b * nv + k] = _mm512_fmadd_ps(pj, row[k], acc[b * nv + k]);
        }
    }
    for (int b = 0; b < g; b++)
        for (int k = 0; k < nv; k++)
            _mm512_storeu_ps(out + (size_t)b * ldo + 16 * k, acc[b * nv + k]);
}

/* Queries four at a time where d_head is 64 (16 sums in registers), else
 * one at a time. */
__attribute__((target("avx512f")))
static void weighted_rows_n_avx512(float *out, size_t ldo, const uint16_t *v, size_t ld, const float *p, size_t ldp,
                                   int nq, int n, int dh)
{
    int b = 0;
    if (dh == 64)
        for (; b < nq; b += 4)
            switch (nq - b) {
            case 1: weighted_group_avx512(out + b * ldo, ldo, v, ld, p + b * ldp, ldp, n, 1, 4); break;
            case 2: weighted_group_avx512(out + b * ldo, ldo, v, ld, p + b * ldp, ldp, n, 2, 4); break;
            case 3: weighted_group_avx512(out + b * ldo, ldo, v, ld, p + b * ldp, ldp, n, 3, 4); break;
            default: weighted_group_avx512(out + b * ldo, ldo, v, ld, p + b * ldp, ldp, n, 4, 4); break;
            }
    for (; b < nq; b++)
        weighted_rows_avx512(out + b * ldo, v, ld, p + b * ldp, n, dh);
}

__attribute__((target("avx2,fma,f16c")))
static void weighted_rows_avx2(float *out, const uint16_t *v, size_t ld, const float *p, int n, int dh)
{
    if (dh % 8 || dh > 64) {
        weighted_rows_scalar(out, v, ld, p, n, dh);
        return;
    }
    __m256 acc[8];
    int nv = dh / 8;
    for (int k = 0; k < nv; k++)
        acc[k] = _mm256_loadu_ps(out + 8 * k);
    for (int j = 0; j < n; j++) {
        __m256 pj = _mm256_set1_ps(p[j]);
        const uint16_t *row = v + (size_t)j * ld;
        for (int k = 0; k < nv; k++)
            acc[k] = _mm256_fmadd_ps(pj, LOAD8_F16(row + 8 * k), acc[k]);
    }
    for (int k = 0; k < nv; k++)
        _mm256_storeu_ps(out + 8 * k, acc[k]);
}

/* ---- exp and erf, 16 and 8 lanes: softmax and GELU ----
 * exp: Cephes' expf (x = n ln 2 + r with ln 2 in two parts, e^r by a
 * degree-5 polynomial, 2^n into the exponent; about 1 ulp) for x in
 * [-87.3, 88.3], clamped there (softmax's arguments are <= 0).
 * erf: Abramowitz and Stegun 7.1.26, |error| < 1.5e-7, as PyTorch's
 * vectorized erf on x86 computes it:
 * erf(x) = sign(x) (1 - t (p1 + t (p2 + t (p3 + t (p4 + t p5)))) e^{-x^2}),
 * t = 1 / (1 + 0.3275911 |x|). */
#define EXP_LO  -87.3f
#define EXP_HI  88.3f
#define LOG2E   1.44269504088896341f
#define LN2_HI  0.693359375f
#define LN2_LO  -2.12194440e-4f
#define EXP_P0  1.9875691500e-4f
#define EXP_P1  1.3981999507e-3f
#define EXP_P2  8.3334519073e-3f
#define EXP_P3  4.1665795894e-2f
#define EXP_P4  1.6666665459e-1f
#define EXP_P5  5.0000001201e-1f
#define ERF_P   0.3275911f
#define ERF_A1  0.254829592f
#define ERF_A2  -0.284496736f
#define ERF_A3  1.421413741f
#define ERF_A4  -1.453152027f
#define ERF_A5  1.061405429f

__attribute__((target("avx512f")))
static inline __m512 exp512(__m512 x)
{
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(EXP_LO)), _mm512_set1_ps(EXP_HI));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
    __m512 p = _mm512_set1_ps(EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

__attribute__((target("avx512f")))
static inline __m512 erf512(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u));
    __m512 a = _mm512_abs_ps(x);
    __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(ERF_P), a, one));
    __m512 r = _mm512_fmadd_ps(_mm512_set1_ps(ERF_A5), t, _mm512_set1_ps(ERF_A4));
    r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(ERF_A3));
    r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(ERF_A2));
    r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(ERF_A1));
    __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(a, a)));
    __m512 y = _mm512_fnmadd_ps(_mm512_mul_ps(r, t), e, one);
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sign));
}

__attribute__((target("avx512f")))
static void gelu_avx512(float *x, int n)
{
    const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f), rs2 = _mm512_set1_ps(0.70710678118654752f);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 e = erf512(_mm512_mul_ps(v, rs2));
        _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_mul_ps(half, v), _mm512_add_ps(one, e)));
    }
    gelu_scalar(x + i, n - i);
}

/* softmax_avx512 from its second pass on, X's largest element being MX. */
__attribute__((target("avx512f")))
static void softmax_from_max_avx512(float *x, int n, float mx)
{
    int i;
    __m512 vmx = _mm512_set1_ps(mx), acc = _mm512_setzero_ps();
    for (i = 0; i + 16 <= n; i += 16) {
        __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), vmx));
        _mm512_storeu_ps(x + i, e);
        acc = _mm512_add_ps(acc, e);
    }
    float sum = _mm512_reduce_add_ps(acc);
    for (; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    __m512 inv = _mm512_set1_ps(1.0f / sum);
    for (i = 0; i + 16 <= n; i += 16)
        _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), inv));
    for (; i < n; i++)
        x[i] *= 1.0f / sum;
}

__attribute__((target("avx512f")))
static void softmax_avx512(float *x, int n)
{
    __m512 vm = _mm512_set1_ps(x[0]);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        vm = _mm512_max_ps(vm, _mm512_loadu_ps(x + i));
    float mx = _mm512_reduce_max_ps(vm);
    for (; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    softmax_from_max_avx512(x, n, mx);
}

/* LAST[-k] += R[k] for k < N: the relative term, distance k, added to the
 * score k slots before the newest (a ring read backwards). */
typedef void add_reversed_fn(float *last, const float *r, int n);

static void add_reversed_scalar(float *last, const float *r, int n)
{
    for (int k = 0; k < n; k++)
        last[-k] += r[k];
}

/* attend_softmax's first step: REL[d] added to the score at distance d from
 * the newest for d < min(N_KEYS, MAX_REL), wrapping past row 0 to the end
 * (distance d sits in row newest - d), by ADD. */
static void add_rel(float *scores, int n_keys, int newest, const float *rel, int max_rel, add_reversed_fn *add)
{
    int m = n_keys < max_rel ? n_keys : max_rel;
    int wrap = m < newest + 1 ? m : newest + 1;
    add(scores + newest, rel, wrap);
    if (m > wrap)
        add(scores + n_keys + newest - wrap, rel + wrap, m - wrap);
}

__attribute__((target("avx512f")))
static void add_reversed_avx512(float *last, const float *r, int n)
{
    const __m512i rev = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    int k = 0;
    for (; k + 16 <= n; k += 16) {
        float *p = last - k - 15;
        _mm512_storeu_ps(p, _mm512_add_ps(_mm512_loadu_ps(p), _mm512_permutexvar_ps(rev, _mm512_loadu_ps(r + k))));
    }
    for (; k < n; k++)
        last[-k] += r[k];
}

/* attend_softmax_generic's steps, each element's the same operations, in
 * fewer passes: the relative term added sixteen at a time, the scaling
 * and the search for the largest in one pass. */
__attribute__((target("avx512f")))
static void rel_softmax_avx512(float *scores, int n_keys, int newest, const float *rel, int max_rel, float scale)
{
    add_rel(scores, n_keys, newest, rel, max_rel, add_reversed_avx512);
    __m512 vs = _mm512_set1_ps(scale), vm = _mm512_set1_ps(scores[0] * scale);
    int j = 0;
    for (; j + 16 <= n_keys; j += 16) {
        __m512 v = _mm512_mul_ps(_mm512_loadu_ps(scores + j), vs);
        _mm512_storeu_ps(scores + j, v);
        vm = _mm512_max_ps(vm, v);
    }
    float mx = _mm512_reduce_max_ps(vm);
    for (; j < n_keys; j++) {
        scores[j] *= scale;
        mx = scores[j] > mx ? scores[j] : mx;
    }
    softmax_from_max_avx512(scores, n_keys, mx);
}

__attribute__((target("avx2,fma")))
static inline __m256 exp256(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(EXP_LO)), _mm256_set1_ps(EXP_HI));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
    __m256 p = _mm256_set1_ps(EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma")))
static inline __m256 erf256(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f), signbit = _mm256_set1_ps(-0.0f);
    __m256 sign = _mm256_and_ps(x, signbit);
    __m256 a = _mm256_andnot_ps(signbit, x);
    __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(ERF_P), a, one));
    __m256 r = _mm256_fmadd_ps(_mm256_set1_ps(ERF_A5), t, _mm256_set1_ps(ERF_A4));
    r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(ERF_A3));
    r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(ERF_A2));
    r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(ERF_A1));
    __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(a, a)));
    return _mm256_or_ps(_mm256_fnmadd_ps(_mm256_mul_ps(r, t), e, one), sign);
}

__attribute__((target("avx2,fma")))
static void gelu_avx2(float *x, int n)
{
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), rs2 = _mm256_set1_ps(0.70710678118654752f);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 e = erf256(_mm256_mul_ps(v, rs2));
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, e)));
    }
    gelu_scalar(x + i, n - i);
}

__attribute__((target("avx2,fma")))
static float hmax256(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma")))
static void softmax_avx2(float *x, int n)
{
    __m256 vm = _mm256_set1_ps(x[0]);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
    float mx = hmax256(vm);
    for (; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    __m256 vmx = _mm256_set1_ps(mx), acc = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
        _mm256_storeu_ps(x + i, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = hsum256(acc);
    for (; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    __m256 inv = _mm256_set1_ps(1.0f / sum);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    for (; i < n; i++)
        x[i] *= 1.0f / sum;
}
#endif

/* weighted_rows for NQ queries, one after another (the levels without a
 * faster way). */
#define WEIGHTED_ROWS_N(name, one)                                                                 \
    static void name(float *out, size_t ldo, const uint16_t *v, size_t ld, const float *p, size_t ldp, \
                     int nq, int n, int dh)                                                        \
    {                                                                                              \
        for (int b = 0; b < nq; b++)                                                               \
            one(out + (size_t)b * ldo, v, ld, p + (size_t)b * ldp, n, dh);                         \
    }
WEIGHTED_ROWS_N(weighted_rows_n_scalar, weighted_rows_scalar)
#if KERNELS_X86
WEIGHTED_ROWS_N(weighted_rows_n_avx2, weighted_rows_avx2)
#endif

/* attend_softmax: the relative term at each score's distance, the scale,
 * then the level's softmax. */
static void attend_softmax_generic(float *scores, int n_keys, int newest, const float *rel, int max_rel, float scale)
{
    add_rel(scores, n_keys, newest, rel, max_rel, add_reversed_scalar);
    for (int j = 0; j < n_keys; j++)
        scores[j] *= scale;
    softmax(scores, n_keys);
}

/* LayerNorm's last step for elements I..N-1 of a row whose mean and
 * variance are MEAN and VAR: OUT = (X - mean) / sd * G + B, in float. */
static void layernorm_out(float *out, const float *x, double mean, double var, const float *g, const float *b, int i,
                          int n, float eps)
{
    float inv = (float)(1.0 / sqrt(var + eps)), m = (float)mean;
    for (; i < n; i++)
        out[i] = (x[i] - m) * inv * g[i] + b[i];
}

/* Four rows at a time: each row's sums are layernorm's chains of double
 * additions, in the same order, run side by side (one row's chain waits on
 * each addition; four keep the adder busy). */
static void layernorm_rows_generic(float *out, const float *x, size_t ld, int rows, const float *g, const float *b, int n,
                                   float eps)
{
    enum { G = 4 };
    int r = 0;
    for (; r + G <= rows; r += G) {
        const float *xr[G];
        double mean[G], var[G];
        for (int k = 0; k < G; k++) {
            xr[k] = x + (size_t)(r + k) * ld;
            mean[k] = var[k] = 0;
        }
        for (int i = 0; i < n; i++)
            for (int k = 0; k < G; k++)
                mean[k] += xr[k][i];
        for (int k = 0; k < G; k++)
            mean[k] /= n;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < G; k++)
                var[k] += (xr[k][i] - mean[k]) * (xr[k][i] - mean[k]);
        for (int k = 0; k < G; k++)
            layernorm_out(out + (size_t)(r + k) * ld, xr[k], mean[k], var[k] / n, g, b, 0, n, eps);
    }
    for (; r < rows; r++)
        layernorm(out + (size_t)r * ld, x + (size_t)r * ld, g, b, n, eps);
}

/* layernorm_rows_generic's chains four rows to a vector: columns I..I+3
 * of four rows transposed into four vectors of one column each, and
 * added in column order, so every row's sums take layernorm's steps; the
 * last pass sixteen columns at a time (no fused multiply-add: each
 * element's two products and sum are layernorm's). */
__attribute__((target("avx512f")))
static void layernorm_rows_avx512(float *out, const float *x, size_t ld, int rows, const float *g, const float *b, int n,
                                  float eps)
{
    int r = 0;
    for (; n % 4 == 0 && r + 4 <= rows; r += 4) {
        const float *x0 = x + (size_t)r * ld, *x1 = x0 + ld, *x2 = x1 + ld, *x3 = x2 + ld;
        __m256d mean = _mm256_setzero_pd(), var = _mm256_setzero_pd();
        for (int i = 0; i < n; i += 4) {
            __m128 c[4] = { _mm_loadu_ps(x0 + i), _mm_loadu_ps(x1 + i), _mm_loadu_ps(x2 + i), _mm_loadu_ps(x3 + i) };
            _MM_TRANSPOSE4_PS(c[0], c[1], c[2], c[3]);      /* c[t]: column i + t of the four rows */
            for (int t = 0; t < 4; t++)
                mean = _mm256_add_pd(mean, _mm256_cvtps_pd(c[t]));
        }
        mean = _mm256_div_pd(mean, _mm256_set1_pd((double)n));
        for (int i = 0; i < n; i += 4) {
            __m128 c[4] = { _mm_loadu_ps(x0 + i), _mm_loadu_ps(x1 + i), _mm_loadu_ps(x2 + i), _mm_loadu_ps(x3 + i) };
            _MM_TRANSPOSE4_PS(c[0], c[1], c[2], c[3]);
            for (int t = 0; t < 4; t++) {
                __m256d dv = _mm256_sub_pd(_mm256_cvtps_pd(c[t]), mean);
                var = _mm256_add_pd(var, _mm256_mul_pd(dv, dv));
            }
        }
        var = _mm256_div_pd(var, _mm256_set1_pd((double)n));
        double mv[4], vv[4];
        _mm256_storeu_pd(mv, mean);
        _mm256_storeu_pd(vv, var);
        for (int k = 0; k < 4; k++) {
            const float *xk = x0 + (size_t)k * ld;
            float *o = out + (size_t)(r + k) * ld;
            float inv = (float)(1.0 / sqrt(vv[k] + eps)), m = (float)mv[k];
            __m512 vi = _mm512_set1_ps(inv), vm = _mm512_set1_ps(m);
            int i = 0;
            for (; i + 16 <= n; i += 16) {
                __m512 y = _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xk + i), vm), vi),
                                         _mm512_loadu_ps(g + i));
                _mm512_storeu_ps(o + i, _mm512_add_ps(y, _mm512_loadu_ps(b + i)));
            }
            layernorm_out(o, xk, mv[k], vv[k], g, b, i, n, eps);
        }
    }
    layernorm_rows_generic(out + (size_t)r * ld, x + (size_t)r * ld, ld, rows - r, g, b, n, eps);
}

/* ------------------------------------------------------------------ the table */

/* The fast kernels of one instruction-set level. */
typedef struct kernel_table {
    kernel_level level;
    void  (*f16_row)(float *out, const uint16_t *in, size_t n);
    void  (*f32_to_f16_row)(uint16_t *out, const float *in, size_t n);
    float (*dot)(const float *a, const float *b, int n);
    void  (*axpy)(float *y, float a, const float *x, int n);
    /* out[b * ldo + r - r0] = W[r] . x_b for NB vectors x_b = X + b * ldx */
    void  (*rows_f32)(float *out, size_t ldo, const float *w, size_t ld, const float *x, size_t ldx,
                      int cols, int nb, int r0, int r1);
    void  (*rows_f16)(float *out, size_t ldo, const uint16_t *w, size_t ld, const float *x, size_t ldx,
                      int cols, int nb, int r0, int r1);
    void  (*rows_i8)(float *out, size_t ldo, const int8_t *w, size_t ld, const float *x, size_t ldx,
                     int cols, int nb, int r0, int r1);
    /* out (dh) += sum_j p[j] V[j] over N rows of half floats LD apart */
    void  (*weighted_rows)(float *out, const uint16_t *v, size_t ld, const float *p, int n, int dh);
    /* the same for NQ queries over the same rows: OUT + b LDO, P + b LDP */
    void  (*weighted_rows_n)(float *out, size_t ldo, const uint16_t *v, size_t ld, const float *p, size_t ldp,
                             int nq, int n, int dh);
    void  (*gelu)(float *x, int n);
    void  (*softmax)(float *x, int n);
    /* attend_softmax */
    void  (*rel_softmax)(float *scores, int n_keys, int newest, const float *rel, int max_rel, float scale);
    /* layernorm_rows */
    void  (*layernorm_rows)(float *out, const float *x, size_t ld, int rows, const float *g, const float *b, int n,
                            float eps);
} kernel_table;

/* Filled by name (and indexed by level): two kernels of one signature
 * cannot change places unseen. */
static const kernel_table kernel_tables[] = {
    [KERNEL_SCALAR] = {
        .level = KERNEL_SCALAR,
        .f16_row = f16_row_scalar,
        .f32_to_f16_row = f32_to_f16_row_scalar,
        .dot = dot_scalar,
        .axpy = axpy_scalar,
        .rows_f32 = rows_f32_scalar,
        .rows_f16 = rows_f16_scalar,
        .rows_i8 = rows_i8_scalar,
        .weighted_rows = weighted_rows_scalar,
        .weighted_rows_n = weighted_rows_n_scalar,
        .gelu = gelu_scalar,
        .softmax = softmax_scalar,
        .rel_softmax = attend_softmax_generic,
        .layernorm_rows = layernorm_rows_generic,
    },
#if KERNELS_X86
    [KERNEL_AVX2] = {
        .level = KERNEL_AVX2,
        .f16_row = f16_row_avx2,
        .f32_to_f16_row = f32_to_f16_row_avx2,
        .dot = dot_avx2,
        .axpy = axpy_avx2,
        .rows_f32 = rows_f32_avx2,
        .rows_f16 = rows_f16_avx2,
        .rows_i8 = rows_i8_avx2,
        .weighted_rows = weighted_rows_avx2,
        .weighted_rows_n = weighted_rows_n_avx2,
        .gelu = gelu_avx2,
        .softmax = softmax_avx2,
        .rel_softmax = attend_softmax_generic,
        .layernorm_rows = layernorm_rows_generic,
    },
    [KERNEL_AVX512] = {
        .level = KERNEL_AVX512,
        .f16_row = f16_row_avx2,
        .f32_to_f16_row = f32_to_f16_row_avx2,
        .dot = dot_avx512,
        .axpy = axpy_avx512,
        .rows_f32 = rows_f32_avx512,
        .rows_f16 = rows_f16_avx512,
        .rows_i8 = rows_i8_avx512,
        .weighted_rows = weighted_rows_avx512,
        .weighted_rows_n = weighted_rows_n_avx512,
        .gelu = gelu_avx512,
        .softmax = softmax_avx512,
        .rel_softmax = rel_softmax_avx512,
        .layernorm_rows = layernorm_rows_avx512,
    },
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

void f32_to_f16_row(uint16_t *out, const float *in, size_t n)
{
    kernels()->f32_to_f16_row(out, in, n);
}

/* Row R of an I8 matrix: its int8 weights times the row's scale. */
static void i8_row(float *out, const matrix *m, int r)
{
    const int8_t *q = (const int8_t *)m->data + (size_t)r * (size_t)m->cols;
    for (int c = 0; c < m->cols; c++)
        out[c] = (float)q[c] * m->scale[r];
}

void matrix_row(float *out, const matrix *m, int r)
{
    if (m->type == GGML_TYPE_F16)
        f16_to_f32_row(out, (const uint16_t *)m->data + (size_t)r * m->cols, (size_t)m->cols);
    else if (m->type == GGML_TYPE_I8)
        i8_row(out, m, r);
    else
        memcpy(out, (const float *)m->data + (size_t)r * m->cols, sizeof(float) * (size_t)m->cols);
}

void matrix_to_f32(float *out, const matrix *m)
{
    size_t n = (size_t)m->rows * (size_t)m->cols;
    if (m->type == GGML_TYPE_F16)
        f16_to_f32_row(out, m->data, n);
    else if (m->type == GGML_TYPE_I8)
        for (int r = 0; r < m->rows; r++)
            i8_row(out + (size_t)r * (size_t)m->cols, m, r);
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

void matmat(float *out, size_t ldo, const matrix *w, const float *x, size_t ldx, int nb, int r0, int r1)
{
    if (w->type == GGML_TYPE_F16)
        kernels()->rows_f16(out, ldo, w->data, (size_t)w->cols, x, ldx, w->cols, nb, r0, r1);
    else if (w->type == GGML_TYPE_I8) {
        /* int8 rows: the sums of q x, then each times its row's scale (the
         * same two roundings for every item, so a batch has one's bits) */
        kernels()->rows_i8(out, ldo, w->data, (size_t)w->cols, x, ldx, w->cols, nb, r0, r1);
        for (int b = 0; b < nb; b++)
            for (int r = r0; r < r1; r++)
                out[(size_t)b * ldo + (size_t)(r - r0)] *= w->scale[r];
    } else
        kernels()->rows_f32(out, ldo, w->data, (size_t)w->cols, x, ldx, w->cols, nb, r0, r1);
}

void matvec(float *out, const matrix *w, const float *x, int r0, int r1)
{
    matmat(out, 0, w, x, 0, 1, r0, r1);
}

void matvec_naive(float *out, const matrix *w, const float *x, int r0, int r1)
{
    for (int r = r0; r < r1; r++) {
        double s = 0;
        for (int c = 0; c < w->cols; c++) {
            size_t k = (size_t)r * (size_t)w->cols + (size_t)c;
            float wv = w->type == GGML_TYPE_F16  ? f16_to_f32(((const uint16_t *)w->data)[k])
                       : w->type == GGML_TYPE_I8 ? (float)((const int8_t *)w->data)[k] * w->scale[r]
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
    layernorm_out(out, x, mean, var / n, g, b, 0, n, eps);
}

void layernorm_rows(float *out, const float *x, size_t ld, int rows, const float *g, const float *b, int n, float eps)
{
    kernels()->layernorm_rows(out, x, ld, rows, g, b, n, eps);
}

void gelu(float *x, int n)
{
    kernels()->gelu(x, n);
}

void softmax(float *x, int n)
{
    kernels()->softmax(x, n);
}

/* ------------------------------------------------------------------ attention */

void attend_query(float *out, const float *q, const uint16_t *k, const uint16_t *v, int ld,
                  int n_keys, int newest, const matrix *er, int dh, float scale, float *scores,
                  float *rel)
{
    int m = n_keys < er->rows ? n_keys : er->rows;
    matvec(rel, er, q, 0, m);                       /* rel[d] = q . E[d] */
    attend_rel(out, q, k, v, ld, n_keys, newest, rel, er->rows, dh, scale, scores);
}

void attend_rel(float *out, const float *q, const uint16_t *k, const uint16_t *v, int ld, int n_keys, int newest,
                const float *rel, int max_rel, int dh, float scale, float *scores)
{
    attend_scores(scores, q, 0, 0, 1, k, ld, dh, 0, n_keys);   /* scores[j] = q . k_j */
    attend_softmax(scores, n_keys, newest, rel, max_rel, scale);
    memset(out, 0, sizeof(float) * (size_t)dh);
    attend_values(out, v, ld, scores, 0, n_keys, dh);
}

void attend_scores(float *scores, const float *q, size_t ldq, size_t lds, int nq, const uint16_t *k, int ld, int dh,
                   int j0, int j1)
{
    kernels()->rows_f16(scores + j0, lds, k, (size_t)ld, q, ldq, dh, nq, j0, j1);
}

void attend_softmax(float *scores, int n_keys, int newest, const float *rel, int max_rel, float scale)
{
    kernels()->rel_softmax(scores, n_keys, newest, rel, max_rel, scale);
}

void attend_values(float *out, const uint16_t *v, int ld, const float *p, int j0, int j1, int dh)
{
    kernels()->weighted_rows(out, v + (size_t)j0 * (size_t)ld, (size_t)ld, p + j0, j1 - j0, dh);
}

void attend_values_n(float *out, size_t ldo, const uint16_t *v, int ld, const float *p, size_t ldp, int nq, int j0,
                     int j1, int dh)
{
    kernels()->weighted_rows_n(out, ldo, v + (size_t)j0 * (size_t)ld, (size_t)ld, p + j0, ldp, nq, j1 - j0, dh);
}

void attend_query_naive(float *out, const float *q, const uint16_t *k, const uint16_t *v, int ld,
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
            s += (double)q[c] * (f16_to_f32(k[(size_t)j * (size_t)ld + (size_t)c]) + e);
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
            o += exp(scores[j] - mx) / sum * f16_to_f32(v[(size_t)j * (size_t)ld + (size_t)c]);
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
