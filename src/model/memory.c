/* memory.c: the player's memory: runs of note-ons keyed by an order-free hash, a follower per stream, the mix. */
#include "model/memory.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* A pitch's share of a run's hash: splitmix64 of it.  The run's hash is the
 * sum of its pitches' (commutative: the order does not count, a repeated
 * pitch counts twice), then mixed with its length. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t run_key(uint64_t sum, int k)
{
    return mix64(sum ^ ((uint64_t)k << 56));
}

typedef struct entry {
    uint64_t key;
    uint8_t next;
} entry;

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (int)x->next - (int)y->next;
}

/* Every run of KMIN..KMAX pitches of PITCHES that no session's end (-1)
 * breaks, with the pitch after it, into E (room for N x (KMAX - KMIN + 1));
 * returns how many, and the note-ons into *NOTES. */
static size_t collect_runs(const int32_t *pitches, size_t n, int kmin, int kmax, entry *e, size_t *notes)
{
    size_t ne = 0, start = 0;             /* start: the first pitch of the current session */
    *notes = 0;
    for (size_t i = 0; i < n; i++) {
        if (pitches[i] < 0) {
            start = i + 1;
            continue;
        }
        ++*notes;
        uint64_t sum = 0;
        for (int k = 1; k <= kmax && i >= start + (size_t)k; k++) {
            sum += mix64((uint64_t)pitches[i - (size_t)k]);
            if (k >= kmin)
                e[ne++] = (entry){ run_key(sum, k), (uint8_t)pitches[i] };
        }
    }
    return ne;
}

int player_memory_build(player_memory *m, const int32_t *pitches, size_t n, int note_on_base, int n_pitches,
                        int kmin, int kmax, float lambda, float decay)
{
    *m = (player_memory){ .kmin = kmin, .kmax = kmax, .lambda = lambda, .decay = decay,
                          .note_on_base = note_on_base, .n_pitches = n_pitches };
    size_t cap = n * (size_t)(kmax - kmin + 1);
    entry *e = malloc((cap ? cap : 1) * sizeof *e);
    if (!e) {
        log_error("player memory: out of memory for %zu runs", cap);
        *m = (player_memory){ 0 };
        return -1;
    }
    size_t ne = collect_runs(pitches, n, kmin, kmax, e, &m->n_notes);
    qsort(e, ne, sizeof *e, cmp_entry);
    m->key = malloc((ne ? ne : 1) * sizeof *m->key);
    m->next = malloc(ne ? ne : 1);
    if (!m->key || !m->next) {
        free(e);
        player_memory_free(m);
        log_error("player memory: out of memory for %zu runs", ne);
        return -1;
    }
    for (size_t i = 0; i < ne; i++) {
        m->key[i] = e[i].key;
        m->next[i] = e[i].next;
    }
    free(e);
    m->n = ne;
    return 0;
}

void player_memory_free(player_memory *m)
{
    free(m->key);
    free(m->next);
    memset(m, 0, sizeof *m);
}

void memory_follower_init(memory_follower *f, const player_memory *m)
{
    memset(f, 0, sizeof *f);
    f->m = m && m->kmax > 0 ? m : NULL;
}

/* The first entry whose key is KEY, or m->n. */
static size_t first_of(const player_memory *m, uint64_t key)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->key[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n && m->key[lo] == key ? lo : m->n;
}

/* The odds of the next pitch after the longest run of the history's last
 * pitches the memory holds; f->have says whether there was one. */
static void look_up(memory_follower *f)
{
    const player_memory *m = f->m;
    uint64_t sums[MEMORY_KMAX_LIMIT + 1];
    int kmax = f->n_hist < m->kmax ? f->n_hist : m->kmax;
    sums[0] = 0;
    for (int k = 1; k <= kmax; k++)
        sums[k] = sums[k - 1] + mix64((uint64_t)f->hist[f->n_hist - k]);
    f->have = 0;
    for (int k = kmax; k >= m->kmin; k--) {
        size_t i = first_of(m, run_key(sums[k], k));
        if (i == m->n)
            continue;
        uint64_t key = m->key[i];
        size_t j = i;
        memset(f->odds, 0, sizeof f->odds);
        while (j < m->n && m->key[j] == key)
            f->odds[m->next[j++]] += 1.0f;
        for (int p = 0; p < m->n_pitches; p++)
            f->odds[p] /= (float)(j - i);
        f->have = 1;
        return;
    }
}

void memory_follower_feed(memory_follower *f, int token)
{
    const player_memory *m = f->m;
    if (!m || token < m->note_on_base || token >= m->note_on_base + m->n_pitches)
        return;
    int p = token - m->note_on_base;
    if (f->have)
        f->confidence = m->decay * f->confidence + (1 - m->decay) * f->odds[p];
    if (f->n_hist == m->kmax) {
        memmove(f->hist, f->hist + 1, (size_t)(m->kmax - 1) * sizeof f->hist[0]);
        f->n_hist--;
    }
    f->hist[f->n_hist++] = p;
    look_up(f);
}

float memory_weight(const memory_follower *f)
{
    return f->m && f->have ? f->m->lambda * f->confidence : 0.0f;
}

void memory_mix(const memory_follower *f, float *logits, int V)
{
    float w = memory_weight(f);
    if (w <= 0.0f)
        return;
    int n = f->m->n_pitches, note_on_base = f->m->note_on_base;
    float mx = logits[0];
    for (int i = 1; i < V; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double z = 0, z_on = 0;
    for (int i = 0; i < V; i++) {
        double e = exp((double)(logits[i] - mx));
        z += e;
        if (i >= note_on_base && i < note_on_base + n)
            z_on += e;
    }
    double log_z = log(z), p_on = z_on / z, log_keep = log1p(-(double)w);
    for (int i = 0; i < V; i++) {
        double lp = (double)(logits[i] - mx) - log_z;
        if (i >= note_on_base && i < note_on_base + n) {
            float c = f->odds[i - note_on_base];    /* 0: (1 - w) p, in logs (no underflow) */
            lp = c > 0 ? log((1 - w) * exp(lp) + w * p_on * c) : lp + log_keep;
        }
        logits[i] = (float)lp;
    }
}
