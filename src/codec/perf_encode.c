/* perf_encode.c: notes -> performance events: quantization, tokenizing (perf_emit), the batch encoder and the streaming encoder. */
#include "codec/perf.h"
#include "codec/perf_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* ---- quantization and the event order ------------------------------------ */

int64_t perf_quantize(const vocab *v, double stretch, double seconds)
{
    double x = seconds * stretch * (1000.0 / v->step_ms);
    if (!(x > 0))
        return 0;                           /* negative or NaN */
    if (x > 1e13)
        x = 1e13;                           /* about 3000 years of 10 ms steps */
    return (int64_t)floor(x + 0.5);
}

static double effective_stretch(const encode_opts *opt)
{
    return opt && opt->stretch > 0 && isfinite(opt->stretch) ? opt->stretch : 1.0;
}

/* One NOTE_ON or NOTE_OFF at a step, packed so that sorting the integers
 * sorts by step, then offs before ons, then pitch: step << 16 | on << 15 |
 * pitch << 7 | velocity. */
#define KEY_MAKE(step, on, pitch, vel) \
    (((uint64_t)(step) << 16) | ((uint64_t)(on) << 15) | ((uint64_t)(pitch) << 7) | (uint64_t)(vel))
#define KEY_STEP(k)  ((int64_t)((k) >> 16))
#define KEY_ON(k)    ((int)(((k) >> 15) & 1))
#define KEY_PITCH(k) ((int)(((k) >> 7) & 0x7F))
#define KEY_VEL(k)   ((int)((k) & 0x7F))

/* LSD radix sort of keys on bits 7 and up (the velocity bits never decide:
 * step, kind and pitch are unique).  TMP has room for N keys. */
static void sort_keys(uint64_t *a, uint64_t *tmp, size_t n)
{
    enum { BITS = 11, RADIX = 1 << BITS };
    uint64_t all = 0;
    size_t count[RADIX];

    for (size_t i = 0; i < n; i++)
        all |= a[i];
    uint64_t *src = a, *dst = tmp;
    for (int shift = 7; shift < 64 && (all >> shift) != 0; shift += BITS) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++)
            count[(src[i] >> shift) & (RADIX - 1)]++;
        size_t sum = 0;
        for (size_t d = 0; d < RADIX; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & (RADIX - 1)]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

static perf_event key_event(uint64_t key)
{
    perf_event ev = { KEY_STEP(key), (uint8_t)KEY_ON(key), (uint8_t)KEY_PITCH(key), (uint8_t)KEY_VEL(key) };
    return ev;
}

/* Tokenizing, once for every encoder and for the service's context. */
size_t perf_emit(const vocab *v, perf_emit_pos *pos, const perf_event *ev, uint16_t *out)
{
    size_t k = 0;

    while (ev->step > pos->step) {
        int64_t shift = ev->step - pos->step;
        if (shift > v->n_time_shifts)
            shift = v->n_time_shifts;
        out[k++] = (uint16_t)vocab_id(v, EVENT_TIME_SHIFT, (int)shift);
        pos->step += shift;
    }
    if (ev->on) {
        int bin = velocity_to_bin(v, ev->velocity);
        if (bin != pos->bin) {
            out[k++] = (uint16_t)vocab_id(v, EVENT_VELOCITY, bin);
            pos->bin = bin;
        }
        out[k++] = (uint16_t)vocab_id(v, EVENT_NOTE_ON, ev->pitch);
    } else {
        out[k++] = (uint16_t)vocab_id(v, EVENT_NOTE_OFF, ev->pitch);
    }
    return k;
}

size_t perf_emit_room(const vocab *v, const perf_emit_pos *pos, int64_t step)
{
    int64_t gap = step > pos->step ? step - pos->step : 0;
    return (size_t)(gap / v->n_time_shifts) + 3;
}

static size_t emit_key(const vocab *v, perf_emit_pos *pos, uint64_t key, uint16_t *out)
{
    perf_event ev = key_event(key);
    return perf_emit(v, pos, &ev, out);
}

/* ---- batch encoder -------------------------------------------------------- */

typedef struct qnote {
    int64_t  on, off;       /* steps */
    uint32_t index;         /* position in the input: earlier wins ties */
    uint8_t  pitch;         /* after transposition */
    uint8_t  velocity;
    uint8_t  lengthened;
    uint8_t  dropped;
} qnote;

static int qnote_cmp(const void *pa, const void *pb)
{
    const qnote *a = pa, *b = pb;
    if (a->on != b->on)
        return a->on < b->on ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

int perf_encode(const vocab *v, const note *notes, size_t n, const encode_opts *opt,
                uint16_t **tokens, size_t *n_tokens)
{
    return perf_encode_ex(v, notes, n, opt, tokens, n_tokens, NULL);
}

/* The in-range notes quantized, bucketed by (transposed) pitch in input
 * order: bucket P is Q[START[P] .. START[P + 1]).  Q has room for N notes. */
static void quantize_notes(const vocab *v, const note *notes, size_t n, const encode_opts *opt,
                           qnote *q, size_t start[129], perf_encode_info *inf)
{
    double stretch = effective_stretch(opt);
    int transpose = opt ? opt->transpose : 0;
    size_t fill[128];

    memset(start, 0, 129 * sizeof *start);
    for (size_t i = 0; i < n; i++) {
        int p = notes[i].pitch + transpose;
        if (p < v->min_pitch || p > v->max_pitch)
            inf->n_out_of_range++;
        else
            start[p + 1]++;
    }
    for (int p = 0; p < 128; p++)
        start[p + 1] += start[p];
    memcpy(fill, start, sizeof fill);
    for (size_t i = 0; i < n; i++) {
        int p = notes[i].pitch + transpose;
        if (p < v->min_pitch || p > v->max_pitch)
            continue;
        qnote *x = &q[fill[p]++];
        x->on = perf_quantize(v, stretch, notes[i].onset);
        x->off = perf_quantize(v, stretch, notes[i].release);
        x->index = (uint32_t)i;
        x->pitch = (uint8_t)p;
        x->velocity = notes[i].velocity < 1 ? 1 : notes[i].velocity > 127 ? 127 : notes[i].velocity;
        x->lengthened = x->off <= x->on;
        x->dropped = 0;
        if (x->lengthened)
            x->off = x->on + 1;
    }
}

/* Within each pitch: order by onset step, then end a note where the next
 * one starts; one that is left no step is dropped. */
static void resolve_collisions(qnote *q, const size_t start[129])
{
    for (int p = 0; p < 128; p++) {
        qnote *b = q + start[p];
        size_t nb = start[p + 1] - start[p];
        for (size_t i = 1; i < nb; i++) {
            if (qnote_cmp(&b[i - 1], &b[i]) > 0) {
                qsort(b, nb, sizeof *b, qnote_cmp);
                break;
            }
        }
        qnote *prev = NULL;
        for (size_t i = 0; i < nb; i++) {
            if (prev && prev->off > b[i].on) {
                prev->off = b[i].on;
                if (prev->off <= prev->on)
                    prev->dropped = 1;
            }
            prev = &b[i];
        }
    }
}

/* The NOTE_ON and NOTE_OFF keys of the notes kept, sorted (TMP: scratch of
 * the same size); returns how many, the last step in *MAX_STEP. */
static size_t note_keys(const qnote *q, size_t m, uint64_t *keys, uint64_t *tmp, int64_t *max_step,
                        perf_encode_info *inf)
{
    size_t nk = 0;

    *max_step = 0;
    for (size_t i = 0; i < m; i++) {
        if (q[i].dropped) {
            inf->n_collapsed++;
            continue;
        }
        inf->n_notes++;
        inf->n_lengthened += q[i].lengthened;
        keys[nk++] = KEY_MAKE(q[i].on, 1, q[i].pitch, q[i].velocity);
        keys[nk++] = KEY_MAKE(q[i].off, 0, q[i].pitch, 0);
        if (q[i].off > *max_step)
            *max_step = q[i].off;
    }
    sort_keys(keys, tmp, nk);
    return nk;
}

int perf_encode_ex(const vocab *v, const note *notes, size_t n, const encode_opts *opt,
                   uint16_t **tokens, size_t *n_tokens, perf_encode_info *info)
{
    perf_encode_info inf = { 0 };
    size_t start[129];
    uint64_t *keys = NULL, *tmp = NULL;
    uint16_t *out = NULL;
    int rc = -1;

    *tokens = NULL;
    *n_tokens = 0;
    if (n > UINT32_MAX) {
        log_error("cannot encode %zu notes: too many", n);
        return -1;
    }
    qnote *q = malloc((n ? n : 1) * sizeof *q);
    keys = malloc((2 * n + 1) * sizeof *keys);
    tmp = malloc((2 * n + 1) * sizeof *tmp);
    if (!q || !keys || !tmp)
        goto oom;
    quantize_notes(v, notes, n, opt, q, start, &inf);
    resolve_collisions(q, start);
    int64_t max_step;
    size_t nk = note_keys(q, start[128], keys, tmp, &max_step, &inf);
    out = malloc((3 * nk + (size_t)(max_step / v->n_time_shifts) + 2) * sizeof *out);
    if (!out)
        goto oom;
    perf_emit_pos pos = { 0, -1 };
    size_t k = 0;
    for (size_t i = 0; i < nk; i++)
        k += emit_key(v, &pos, keys[i], out + k);
    if (opt && opt->add_eos && v->has_pad_eos)
        out[k++] = (uint16_t)vocab_id(v, EVENT_EOS, 0);
    *tokens = out;
    *n_tokens = k;
    out = NULL;
    rc = 0;
    goto done;
oom:
    log_error("cannot encode %zu notes: out of memory", n);
done:
    if (info)
        *info = inf;
    free(q);
    free(keys);
    free(tmp);
    free(out);
    return rc;
}

/* ---- streaming encoder ----------------------------------------------------- */

enum {
    PENDING_MAX = 1024,     /* at most 3 per pitch can be pending: ON, OFF, bumped OFF */
    QUEUE_MIN = 4096
};

struct perf_encoder {
    const vocab *v;
    double  stretch;
    int     transpose;
    int     add_eos;
    pedal_fold fold;            /* by input pitch */
    int64_t on_step[128];       /* onset step of the sounding note, by input pitch */
    /* the last note that ended, by input pitch, to drop it if the pitch is
     * struck again within its (lengthened) single step */
    int64_t last_on[128], last_off[128];
    uint8_t last_lengthened[128];
    double  last_time;          /* latest event */
    double  floor_time;         /* no event before this (advance) */
    /* events not final yet: steps >= the step of the latest event */
    uint64_t pending[PENDING_MAX];
    size_t   n_pending;
    /* final events, read from head (keys) */
    uint64_t *keys;
    size_t   k_head, k_len, k_cap;
    int      emits_ids;         /* 1: final events become ids (perf_encoder_pop);
                                   0: they are handed out (perf_encoder_pop_events) */
    perf_emit_pos emit;         /* where the ids handed out stand */
    /* final ids, read from head */
    uint16_t *queue;
    size_t   q_head, q_len, q_cap;
    perf_encode_info info;
};

static void encoder_reset(perf_encoder *e)
{
    memset(&e->fold, 0, sizeof e->fold);
    for (int p = 0; p < 128; p++)
        e->last_off[p] = e->last_on[p] = -1;
    e->last_time = e->floor_time = 0;
    e->n_pending = 0;
    e->emit.step = 0;
    e->emit.bin = -1;
}

static perf_encoder *encoder_new(const vocab *v, const encode_opts *opt, int emits_ids)
{
    perf_encoder *e = calloc(1, sizeof *e);
    if (!e || !(e->queue = malloc(QUEUE_MIN * sizeof *e->queue))
        || !(e->keys = malloc(PENDING_MAX * sizeof *e->keys))) {
        log_error("cannot create a streaming encoder: out of memory");
        if (e)
            free(e->queue);
        free(e);
        return NULL;
    }
    e->q_cap = QUEUE_MIN;
    e->k_cap = PENDING_MAX;
    e->v = v;
    e->stretch = effective_stretch(opt);
    e->transpose = opt ? opt->transpose : 0;
    e->add_eos = opt ? opt->add_eos : 0;
    e->emits_ids = emits_ids;
    encoder_reset(e);
    return e;
}

perf_encoder *perf_encoder_new(const vocab *v, const encode_opts *opt)
{
    return encoder_new(v, opt, 1);
}

perf_encoder *perf_encoder_new_events(const vocab *v, const encode_opts *opt)
{
    return encoder_new(v, opt, 0);
}

void perf_encoder_free(perf_encoder *e)
{
    if (!e)
        return;
    free(e->keys);
    free(e->queue);
    free(e);
}

perf_encode_info perf_encoder_info(const perf_encoder *e) { return e->info; }

/* Makes room for N more items of SIZE bytes at the tail of a queue read
 * from *HEAD (LEN items, CAP room). */
static int queue_grow(void **buf, size_t size, size_t *head, size_t len, size_t *cap, size_t n)
{
    if (*head + len + n <= *cap)
        return 0;
    if (*head > 0) {
        memmove(*buf, (char *)*buf + *head * size, len * size);
        *head = 0;
        if (len + n <= *cap)
            return 0;
    }
    size_t ncap = *cap;
    while (ncap < len + n)
        ncap *= 2;
    void *p = realloc(*buf, ncap * size);
    if (!p) {
        log_error("streaming encoder: out of memory");
        return -1;
    }
    *buf = p;
    *cap = ncap;
    return 0;
}

static int ids_reserve(perf_encoder *e, size_t n)
{
    void *buf = e->queue;
    int rc = queue_grow(&buf, sizeof *e->queue, &e->q_head, e->q_len, &e->q_cap, n);
    e->queue = buf;
    return rc;
}

/* The final events so far become ids (the token interface). */
static int encoder_emit_ids(perf_encoder *e)
{
    for (; e->k_len > 0; e->k_head++, e->k_len--) {
        uint64_t key = e->keys[e->k_head];
        if (ids_reserve(e, perf_emit_room(e->v, &e->emit, KEY_STEP(key))) < 0)
            return -1;
        e->q_len += emit_key(e->v, &e->emit, key, e->queue + e->q_head + e->q_len);
    }
    e->k_head = 0;
    return 0;
}

/* The pending keys of steps before LIMIT become final, in key order. */
static int encoder_flush(perf_encoder *e, int64_t limit)
{
    uint64_t ready[PENDING_MAX];
    size_t nr = 0, keep = 0;

    for (size_t i = 0; i < e->n_pending; i++) {
        if (KEY_STEP(e->pending[i]) < limit)
            ready[nr++] = e->pending[i];
        else
            e->pending[keep++] = e->pending[i];
    }
    e->n_pending = keep;
    for (size_t i = 1; i < nr; i++) {           /* insertion sort: a handful of keys */
        uint64_t k = ready[i];
        size_t j = i;
        for (; j > 0 && (ready[j - 1] >> 7) > (k >> 7); j--)
            ready[j] = ready[j - 1];
        ready[j] = k;
    }
    void *buf = e->keys;
    int rc = queue_grow(&buf, sizeof *e->keys, &e->k_head, e->k_len, &e->k_cap, nr);
    e->keys = buf;
    if (rc < 0)
        return -1;
    memcpy(e->keys + e->k_head + e->k_len, ready, nr * sizeof *ready);
    e->k_len += nr;
    return e->emits_ids ? encoder_emit_ids(e) : 0;
}

static int pending_add(perf_encoder *e, uint64_t key)
{
    if (e->n_pending == PENDING_MAX) {
        log_error("streaming encoder: too many simultaneous events");
        return -1;
    }
    e->pending[e->n_pending++] = key;
    return 0;
}

static void pending_remove(perf_encoder *e, int64_t step, int on, int pitch)
{
    for (size_t i = 0; i < e->n_pending; i++) {
        uint64_t k = e->pending[i];
        if (KEY_STEP(k) == step && KEY_ON(k) == on && KEY_PITCH(k) == pitch) {
            e->pending[i] = e->pending[--e->n_pending];
            return;
        }
    }
}

static int out_pitch(const perf_encoder *e, int p)
{
    int q = p + e->transpose;
    return q < e->v->min_pitch || q > e->v->max_pitch ? -1 : q;
}

static int encoder_end_note(perf_encoder *e, int p, int64_t step)
{
    int q = out_pitch(e, p);
    if (q < 0)
        return 0;
    int64_t on = e->on_step[p], off = step;
    int lengthened = off <= on;
    if (lengthened)
        off = on + 1;
    e->last_on[p] = on;
    e->last_off[p] = off;
    e->last_lengthened[p] = (uint8_t)lengthened;
    e->info.n_notes++;
    e->info.n_lengthened += (size_t)lengthened;
    return pending_add(e, KEY_MAKE(off, 0, q, 0));
}

static int encoder_start_note(perf_encoder *e, int p, int64_t step, int velocity)
{
    int q = out_pitch(e, p);
    e->on_step[p] = step;
    if (q < 0) {
        e->info.n_out_of_range++;
        return 0;
    }
    if (e->last_off[p] > step) {
        /* The previous note of this pitch began in this step and was given
         * one step: it cannot be encoded beside this one, so it goes. */
        pending_remove(e, e->last_off[p], 0, q);
        pending_remove(e, e->last_on[p], 1, q);
        e->info.n_notes--;
        e->info.n_lengthened -= e->last_lengthened[p];
        e->info.n_collapsed++;
        e->last_off[p] = -1;
    }
    return pending_add(e, KEY_MAKE(step, 1, q, velocity));
}

int perf_encoder_push(perf_encoder *e, const smf_event *ev)
{
    double t = ev->time > e->floor_time ? ev->time : e->floor_time;
    int64_t step = perf_quantize(e->v, e->stretch, t);
    fold_step fs;

    if (encoder_flush(e, step) < 0)
        return -1;
    e->last_time = e->floor_time = t;
    perf_fold_event(&e->fold, ev, &fs);
    for (int k = 0; k < fs.n_ends; k++)
        if (encoder_end_note(e, fs.ends[k], step) < 0)
            return -1;
    return fs.struck >= 0 ? encoder_start_note(e, fs.struck, step, fs.velocity) : 0;
}

int perf_encoder_advance(perf_encoder *e, double seconds)
{
    if (seconds > e->floor_time)
        e->floor_time = seconds;
    return encoder_flush(e, perf_quantize(e->v, e->stretch, e->floor_time));
}

int perf_encoder_finish(perf_encoder *e)
{
    int64_t step = perf_quantize(e->v, e->stretch, e->last_time);

    for (int p = 0; p < 128; p++)
        if (e->fold.state[p] != KEY_SILENT && encoder_end_note(e, p, step) < 0)
            return -1;
    if (encoder_flush(e, INT64_MAX) < 0)
        return -1;
    if (e->emits_ids && e->add_eos && e->v->has_pad_eos) {
        if (ids_reserve(e, 1) < 0)
            return -1;
        e->queue[e->q_head + e->q_len++] = (uint16_t)vocab_id(e->v, EVENT_EOS, 0);
    }
    encoder_reset(e);
    return 0;
}

size_t perf_encoder_pop(perf_encoder *e, uint16_t *ids, size_t max)
{
    size_t n = e->q_len < max ? e->q_len : max;
    memcpy(ids, e->queue + e->q_head, n * sizeof *ids);
    e->q_head += n;
    e->q_len -= n;
    if (e->q_len == 0)
        e->q_head = 0;
    return n;
}

size_t perf_encoder_pop_events(perf_encoder *e, perf_event *out, size_t max)
{
    size_t n = e->k_len < max ? e->k_len : max;
    for (size_t i = 0; i < n; i++)
        out[i] = key_event(e->keys[e->k_head + i]);
    e->k_head += n;
    e->k_len -= n;
    if (e->k_len == 0)
        e->k_head = 0;
    return n;
}
