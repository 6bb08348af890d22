/* continuation.c: one continuation of the Music Transformer: the context, the mask, the nudges, the sampler, the caps. */
#include "play/continuation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/perf.h"
#include "model/batch.h"
#include "util/log.h"

/* The codec fills the sampler's mask (perf_decoder_next_mask): same values. */
_Static_assert((int)PERF_NEXT_FORBIDDEN == (int)SAMPLER_FORBIDDEN && (int)PERF_NEXT_PROTECTED == (int)SAMPLER_PROTECTED,
               "the codec's mask values are the sampler's");

#define GUARD_IDS 4096      /* ids without a note: the continuation ends (cannot happen
                               with a trained model: time shifts are capped) */

/* One id into the KV cache (the context calls it for every id; offline the
 * primer's wait for one prefill).  A player's NOTE_ON or NOTE_OFF on a pitch
 * the model holds (a duet) ends the model's note in the context (a pitch
 * sounds once there), so the model can no longer end it: its note-off goes
 * out with the next call of next. */
static int decode_id(void *user, int id)
{
    continuation *c = user;
    int p;
    event_type t = vocab_decode(c->v, id, &p);
    if (c->hearing && (t == EVENT_NOTE_ON || t == EVENT_NOTE_OFF) && c->model_on[p]) {
        c->model_on[p] = 0;
        c->cut_at[p] = (double)(c->ctx.pos.emit.step - c->ctx.first_step) * c->v->step_ms / 1000.0;
        c->n_cut++;
    }
    if (c->prefill)
        return 0;
    if (c->batch) {             /* a candidate: the batch decodes it with the others */
        if (c->queued >= 0) {
            log_error("continuation: candidate %d fed two ids in one step", c->seq);
            return -1;
        }
        c->queued = id;
        return 0;
    }
    return model_decode(&c->st, id) ? 0 : -1;
}

/* The logits the next id is sampled from. */
static float *next_logits(continuation *c)
{
    return c->batch ? model_batch_logits(c->batch, c->seq) : c->st.logits;
}

int continuation_init(continuation *c, model *m, const vocab *v, int n_ctx, int threads, model_memory memory,
                      int prefill)
{
    memset(c, 0, sizeof *c);
    c->v = v;
    c->pending = -1;
    c->queued = -1;
    c->seq = -1;
    c->prefill = prefill;
    for (int p = 0; p < 128; p++)
        c->cut_at[p] = -1;
    c->raw = malloc(sizeof(float) * (size_t)m->cfg.vocab_size);
    if (!c->raw) {
        log_error("continuation: out of memory");
        return -1;
    }
    if (model_state_init(&c->st, m, threads) < 0) {
        free(c->raw);
        return -1;
    }
    model_state_set_memory(&c->st, memory);
    if (context_init(&c->ctx, v, n_ctx, PLAY_MAX_NOTE_MS / 1000.0, decode_id, c) < 0) {
        model_state_free(&c->st);
        return -1;
    }
    return 0;
}

void continuation_free(continuation *c)
{
    if (c->have_smp)
        sampler_free(&c->smp);
    context_free(&c->ctx);
    model_state_free(&c->st);
    free(c->sampled);
    free(c->raw);
    free(c->attention);
    memset(c, 0, sizeof *c);
}

/* Feeds the note event handed out last, if any. */
static int flush_pending(continuation *c)
{
    int id = c->pending;
    c->pending = -1;
    return id >= 0 ? context_feed(&c->ctx, id) : 0;
}

/* In window memory a full window slides by prefilling 3/4 of it again:
 * tens of ms for the default model, more for big ones.  Inside a
 * continuation's first events that would delay notes that are due soon,
 * so it slides while the player plays, when fewer than context/8 events of
 * room are left.  Stream memory never slides: a full cache rolls. */
static int slide_early(continuation *c)
{
    const model_state *s = &c->st;
    int room = s->m->cfg.context - s->n;
    if (c->prefill || s->memory != MODEL_MEMORY_WINDOW || room >= s->m->cfg.context / 8)
        return 0;
    return model_slide(&c->st);
}

int continuation_hear(continuation *c, const smf_event *msg)
{
    if (flush_pending(c) < 0)
        return -1;
    c->hearing = 1;
    int rc = context_hear(&c->ctx, msg);
    c->hearing = 0;
    return rc < 0 ? -1 : slide_early(c);
}

int continuation_hear_until(continuation *c, double t)
{
    if (flush_pending(c) < 0)
        return -1;
    c->hearing = 1;
    int rc = context_hear_until(&c->ctx, t);
    c->hearing = 0;
    return rc;
}

/* Offline: the context's ids enter the model in one prefill, as a slid
 * window would hold them (the last `keep`), or in stream memory as many as
 * it holds. */
static int prefill_heard(continuation *c)
{
    model_state *s = &c->st;
    int full = s->memory == MODEL_MEMORY_STREAM ? s->m->cfg.context : s->keep;
    int n = c->ctx.pos.n_hist < full ? c->ctx.pos.n_hist : full;
    c->prefill = 0;
    model_state_reset(s);
    return n > 0 ? model_prefill(s, c->ctx.hist + c->ctx.pos.n_hist - n, n, NULL) : 0;
}

/* The sampler, allocated once and re-seeded per continuation. */
static int configure_sampler(continuation *c, const cont_spec *s)
{
    if (c->have_smp)
        return sampler_configure(&c->smp, &s->play.sampling, s->seed);
    c->have_smp = sampler_init(&c->smp, c->st.m->cfg.vocab_size, &s->play.sampling, s->seed) == 0;
    return c->have_smp ? 0 : -1;
}

/* ---- the knobs (play_options.h): set at begin, applied at each sample ---- */

#define DENSITY_GAIN   1.2      /* density d: each note-on's odds times d^1.2 (with the pace's aim times d) */
#define VELOCITY_SIGMA 1.5      /* velocity bins: the width of the pull toward the target's bin */
#define MOTIF_GAIN     4.0f     /* motif 1: a note that goes on a run heard, its logit + 4 ln(1 + count) */
#define EXPLICIT_KEY_WEIGHT 30  /* a named key counts as 30 note-ons of each class of its scale */

int chord_order_insert(unsigned char *pitch, double *at, int n, int p, double t)
{
    int j = n;
    for (; j > 0 && at[j - 1] == t && pitch[j - 1] > p; j--) {
        pitch[j] = pitch[j - 1];
        at[j] = at[j - 1];
    }
    pitch[j] = (unsigned char)p;
    at[j] = t;
    return n + 1;
}

/* The note-ons heard in the last FOLLOW_WINDOW_S seconds, oldest first
 * and, struck together, low to high: their pitches into c->phrase, their
 * mean pitch, their classes' counts. */
static void read_heard(continuation *c, double n_c[12])
{
    const perf_follow *f = &c->ctx.pos.follow;
    double now = context_time(&c->ctx), sum = 0, onset[FOLLOW_RING];
    int n = 0;
    memset(n_c, 0, 12 * sizeof *n_c);
    for (unsigned k = f->n; k-- > 0;) {
        unsigned i = (f->head + FOLLOW_RING - 1 - k) % FOLLOW_RING;
        if (f->onset[i] <= now - FOLLOW_WINDOW_S)
            continue;
        n = chord_order_insert(c->phrase, onset, n, f->pitch[i], f->onset[i]);
        sum += f->pitch[i];
        n_c[f->pitch[i] % 12] += 1;
    }
    c->n_phrase = n;
    c->heard_pitch = n ? sum / n : 60;
}

/* The major or minor scale whose Krumhansl-Kessler profile is nearest the
 * classes heard (key auto, key_lock): 1, or 0 when nothing was heard. */
static int nearest_scale(const double n_c[12], unsigned char scale[12])
{
    static const double major[12] = { 6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88 };
    static const double minor[12] = { 6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17 };
    double best = -1e300, total = 0;
    play_key k = { PLAY_MODE_IONIAN, 0, 0 };
    for (int i = 0; i < 12; i++)
        total += n_c[i];
    if (total <= 0)
        return 0;
    for (int t = 0; t < 12; t++)
        for (int m = 0; m < 2; m++) {
            double score = 0;
            for (int i = 0; i < 12; i++)
                score += n_c[(t + i) % 12] * (m ? minor[i] : major[i]);
            if (score > best) {
                best = score;
                k = (play_key){ (unsigned char)(m ? PLAY_MODE_AEOLIAN : PLAY_MODE_IONIAN), (unsigned char)t, 0 };
            }
        }
    return play_key_scale(&k, scale) == 0;
}

/* What the knobs need of what was heard: density scales the pace's aim; a
 * named key replaces the classes heard in the key pull (as if its scale
 * had been heard EXPLICIT_KEY_WEIGHT times a class), off drops the pull;
 * key_lock's scale; the phrase and its register. */
static void set_knobs(continuation *c, const play_settings *p)
{
    perf_follow *f = &c->ctx.pos.follow;
    double n_c[12];
    read_heard(c, n_c);
    f->aim *= p->density;
    f->pace *= (float)(1 + fabs(log2(p->density)));   /* 2 and 0.5 keep the new aim twice as firmly */
    if (p->key.kind == PLAY_KEY_OFF)
        f->key_pull = 0;
    unsigned char named[12];
    if (play_key_scale(&p->key, named) == 0) {
        double w[12], total = 0;
        for (int i = 0; i < 12; i++)
            total += w[i] = named[i] ? EXPLICIT_KEY_WEIGHT : 0;
        for (int i = 0; i < 12; i++)
            f->key_bias[i] = f->key_pull * (float)log(12.0 * (w[i] + 1) / (total + 12));
        memcpy(c->scale, named, sizeof named);
        c->have_scale = p->key_lock;
    } else {
        c->have_scale = p->key_lock && p->key.kind == PLAY_KEY_AUTO && nearest_scale(n_c, c->scale);
    }
}

/* Adds D(i) to the logits of ids BASE..BASE+N-1, then moves them all by one
 * amount so that the class keeps its total probability among the ids the
 * mask allows: a knob changes which note, or which wait, never how many. */
typedef float (*reweigh_fn)(const continuation *c, const void *arg, int i, float logit);
static void reweigh(continuation *c, float *logits, int base, int n, reweigh_fn d, const void *arg)
{
    const uint8_t *mask = sampler_mask(&c->smp);
    double before = 0, after = 0, top = -1e30;
    for (int i = 0; i < n; i++)
        if (mask[base + i] != SAMPLER_FORBIDDEN && logits[base + i] > top)
            top = logits[base + i];
    for (int i = 0; i < n; i++)
        if (mask[base + i] != SAMPLER_FORBIDDEN)
            before += exp(logits[base + i] - top);
    for (int i = 0; i < n; i++) {
        logits[base + i] = d(c, arg, i, logits[base + i]);
        if (mask[base + i] != SAMPLER_FORBIDDEN)
            after += exp(logits[base + i] - top);
    }
    if (before <= 0 || after <= 0)
        return;
    float shift = (float)(log(before) - log(after));
    for (int i = 0; i < n; i++)
        logits[base + i] += shift;
}

static float by_pitch_temperature(const continuation *c, const void *arg, int i, float l)
{
    (void)arg;
    (void)i;
    return l / (float)c->spec.play.pitch_temperature;
}

static float by_rhythm_temperature(const continuation *c, const void *arg, int i, float l)
{
    (void)arg;
    (void)i;
    return l / (float)c->spec.play.rhythm_temperature;
}

/* Weights W (this step's odds, unnormalized, 0 for what the mask forbids)
 * of the ids BASE..BASE+N-1; returns their total, and the mean of X under
 * them in *MEAN. */
static double class_weights(continuation *c, const float *logits, int base, int n, const double *x, double *w,
                            double *mean)
{
    const uint8_t *mask = sampler_mask(&c->smp);
    double top = -1e30, total = 0, m = 0;
    for (int i = 0; i < n; i++)
        if (mask[base + i] != SAMPLER_FORBIDDEN && logits[base + i] > top)
            top = logits[base + i];
    for (int i = 0; i < n; i++) {
        w[i] = mask[base + i] != SAMPLER_FORBIDDEN ? exp(logits[base + i] - top) : 0;
        total += w[i];
        m += w[i] * x[i];
    }
    *mean = total > 0 ? m / total : 0;
    return total;
}

/* The tilt lambda * X (|lambda| <= LIM) that moves the mean of X under
 * weights W to WANT, or as far as LIM reaches: by bisection, since the
 * mean grows with lambda. */
static double tilt_to(const double *w, const double *x, int n, double want, double lim)
{
    double lo = -lim, hi = lim, xmin = x[0], xmax = x[0];
    for (int i = 1; i < n; i++) {
        xmin = x[i] < xmin ? x[i] : xmin;
        xmax = x[i] > xmax ? x[i] : xmax;
    }
    for (int it = 0; it < 30; it++) {
        double mid = (lo + hi) / 2, off = mid > 0 ? xmax : xmin, sum = 0, mean = 0;
        for (int i = 0; i < n; i++) {
            double e = w[i] * exp(mid * (x[i] - off));    /* shifted: no overflow */
            sum += e;
            mean += e * x[i];
        }
        if (sum > 0 && mean / sum < want)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

typedef struct tilt {
    const double *x;
    double lambda;
} tilt;

static float by_tilt(const continuation *c, const void *arg, int i, float l)
{
    const tilt *t = arg;
    (void)c;
    return l + (float)(t->lambda * t->x[i]);
}

/* register: the tilt on the note-ons that moves the mean pitch of this
 * step's odds up by REGISTER_STEP * register_shift semitones (|lambda| <=
 * 1): the same shift up and down, whatever the model's odds lean to.  The
 * model follows its own notes, so the shifts add up: on ASAP's valid split
 * a full shift at each step moved the mean pitch 2.7 to 2.9 times as far
 * as asked, 0.2 of it as far (docs/REALISM.md). */
#define REGISTER_STEP 0.2
static void steer_register(continuation *c, float *logits)
{
    const vocab *v = c->v;
    int n = v->max_pitch - v->min_pitch + 1;
    double x[128], w[128], mean;
    for (int i = 0; i < n; i++)
        x[i] = i;
    if (class_weights(c, logits, v->note_on_base, n, x, w, &mean) <= 0)
        return;
    tilt t = { x, tilt_to(w, x, n, mean + REGISTER_STEP * c->spec.play.register_shift, 1) };
    reweigh(c, logits, v->note_on_base, n, by_tilt, &t);
}

/* rhythm_temperature: the time shifts' odds at their own temperature, then
 * tilted by lambda * steps back to the mean wait they had: the rhythm
 * grows more (less) regular, the pace stays (on ASAP's valid split, 0.7
 * alone played 37 % more notes a second, kept to the mean log-wait 16 %
 * more, kept to the mean wait 2 % fewer). */
static void steer_rhythm(continuation *c, float *logits)
{
    const vocab *v = c->v;
    int n = v->n_time_shifts;
    double x[256], w[256], before, after;
    if (n > 256)
        return;
    for (int i = 0; i < n; i++)
        x[i] = i + 1.0;
    if (class_weights(c, logits, v->time_shift_base, n, x, w, &before) <= 0)
        return;
    reweigh(c, logits, v->time_shift_base, n, by_rhythm_temperature, NULL);
    if (class_weights(c, logits, v->time_shift_base, n, x, w, &after) <= 0)
        return;
    tilt t = { x, tilt_to(w, x, n, before, 4) };
    reweigh(c, logits, v->time_shift_base, n, by_tilt, &t);
}

static float by_velocity(const continuation *c, const void *arg, int b, float l)
{
    (void)arg;
    double d = b - velocity_to_bin(c->v, c->spec.play.velocity);
    return l - (float)(d * d / (2 * VELOCITY_SIGMA * VELOCITY_SIGMA));
}

/* motif: for each pitch, how often it would go on as the phrase went on,
 * after a run of intervals that the continuation's last note-ons repeat
 * (in any transposition): a run of two intervals counts 1, of one
 * MOTIF_SHORT (many more match, each says less). */
#define MOTIF_SHORT 0.3f
static int motif_counts(const continuation *c, float counts[128])
{
    const perf_follow *f = &c->ctx.pos.follow;
    if (f->n < 3 || c->n_phrase < 3)
        return 0;
    int last[3];
    for (int k = 0; k < 3; k++)
        last[2 - k] = f->pitch[(f->head + FOLLOW_RING - 1 - (unsigned)k) % FOLLOW_RING];
    int found = 0;
    memset(counts, 0, 128 * sizeof *counts);
    for (int i = 0; i + 2 < c->n_phrase; i++) {
        const unsigned char *ph = c->phrase + i;
        if (ph[1] - ph[0] != last[2] - last[1])
            continue;
        int next = last[2] + (ph[2] - ph[1]);
        int two = i > 0 && ph[0] - ph[-1] == last[1] - last[0];
        if (next >= 0 && next < 128) {
            counts[next] += two ? 1.0f : MOTIF_SHORT;
            found = 1;
        }
    }
    return found;
}

static float by_motif(const continuation *c, const void *counts, int i, float l)
{
    int p = c->v->min_pitch + i;
    return l + (float)c->spec.play.motif * MOTIF_GAIN * logf(1.0f + ((const float *)counts)[p]);
}

/* release: a note of the continuation's held past RELEASE_FROM of the
 * length cap has its NOTE_OFF drawn nearer, up to release x RELEASE_GAIN
 * on its logit at the cap, so that it ends as a pianist would let go
 * rather than being cut there.  The model, left alone, holds a note to
 * the cap a dozen times as often as a pianist does (docs/REALISM.md). */
#define RELEASE_FROM 0.4
#define RELEASE_GAIN 6.0
static void steer_release(continuation *c, float *logits)
{
    const perf_decoder *d = &c->ctx.pos.dec;
    const vocab *v = c->v;
    double cap = c->spec.play.max_note_ms / 1000.0, from = cap * RELEASE_FROM;
    for (int p = v->min_pitch; p <= v->max_pitch; p++) {
        double age = d->onset[p] >= 0 && c->model_on[p] ? d->time - d->onset[p] : 0;
        if (age > from)
            logits[v->note_off_base + p - v->min_pitch] +=
                (float)(c->spec.play.release * RELEASE_GAIN * (age - from) / (cap - from));
    }
}

/* The knobs on the logits, after the codec's nudges: each one computes
 * nothing at its neutral value (motif and release 0). */
static void steer(continuation *c, float *logits)
{
    const play_settings *p = &c->spec.play;
    const vocab *v = c->v;
    int n_pitch = v->max_pitch - v->min_pitch + 1;
    float counts[128];
    if (p->density != 1)
        for (int i = 0; i < n_pitch; i++)
            logits[v->note_on_base + i] += (float)(DENSITY_GAIN * log(p->density));
    if (p->register_shift != 0)
        steer_register(c, logits);
    if (p->release > 0)
        steer_release(c, logits);
    if (p->motif > 0 && motif_counts(c, counts))
        reweigh(c, logits, v->note_on_base, n_pitch, by_motif, counts);
    if (p->pitch_temperature != 1)
        reweigh(c, logits, v->note_on_base, n_pitch, by_pitch_temperature, NULL);
    if (p->rhythm_temperature != 1)
        steer_rhythm(c, logits);
    if (p->velocity > 0)
        reweigh(c, logits, v->velocity_base, v->n_velocity_bins, by_velocity, NULL);
}

int continuation_begin(continuation *c, double at, const cont_spec *s)
{
    const play_settings *p = &s->play;
    if (flush_pending(c) < 0 || configure_sampler(c, s) < 0)
        return -1;
    c->spec = *s;
    /* a duet keeps the pace and key of its own (the player plays along),
     * unless a knob asks for a density or a key */
    c->ctx.pos.follow.pace = s->duet && p->density == 1 ? 0.0f : (float)p->sampling.pace;
    c->ctx.pos.follow.key_pull = s->duet && p->key.kind == PLAY_KEY_AUTO ? 0.0f : (float)p->sampling.key_pull;
    c->ctx.pos.dec.max_note_s = p->max_note_ms / 1000.0;
    if (context_begin(&c->ctx, at) < 0)
        return -1;
    if (c->prefill && prefill_heard(c) < 0)
        return -1;
    set_knobs(c, p);
    memset(c->model_on, 0, sizeof c->model_on);
    for (int p = 0; p < 128; p++)
        c->cut_at[p] = -1;
    c->n_cut = 0;
    c->n_out = 0;
    c->n_capped = 0;
    c->n_sampled = 0;
    c->loglik_model = c->loglik_nudged = 0;
    c->guard = 0;
    c->queue = NULL;
    c->n_attention = 0;
    return 0;
}

/* What may come next: the codec's rule (what the decoder would discard,
 * time shifts protected), no note-on outside pitch_low..pitch_high or (key_lock)
 * the key's scale, at most max_held notes of the continuation's own
 * (in a duet the player's sounding notes are in the decoder too and leave
 * the cap alone), no end of sequence (the length asked for decides: a
 * model trained on whole pieces ends one there, not a continuation), and
 * the first note now, at the dynamic in force. */
static void fill_mask(continuation *c)
{
    const vocab *v = c->v;
    const context *x = &c->ctx;
    int others = 0;
    for (int p = 0; p < 128; p++)
        others += x->pos.dec.onset[p] >= 0 && !c->model_on[p];
    perf_decoder_next_mask(&x->pos.dec, c->spec.play.max_held + others, 0,
                           !c->smp.set.filter_time, sampler_mask(&c->smp), c->smp.vocab_size);
    const play_settings *ps = &c->spec.play;
    if (ps->pitch_low > v->min_pitch || ps->pitch_high < v->max_pitch || c->have_scale)
        for (int p = v->min_pitch; p <= v->max_pitch; p++)
            if (p < ps->pitch_low || p > ps->pitch_high || (c->have_scale && !c->scale[p % 12]))
                sampler_forbid(&c->smp, vocab_id(v, EVENT_NOTE_ON, p));
    if (x->first_step >= 0)
        return;
    for (int s = 1; s <= v->n_time_shifts; s++)
        sampler_forbid(&c->smp, vocab_id(v, EVENT_TIME_SHIFT, s));
    if (x->pos.emit.bin >= 0)
        for (int b = 0; b < v->n_velocity_bins; b++)
            sampler_forbid(&c->smp, vocab_id(v, EVENT_VELOCITY, b));
}

/* Seconds from the continuation's first note to the current position. */
static double now_s(const continuation *c)
{
    return (double)(c->ctx.pos.emit.step - c->ctx.first_step) * c->v->step_ms / 1000.0;
}

double continuation_origin(const continuation *c)
{
    return (double)c->ctx.first_step * c->v->step_ms / 1000.0;
}

/* Notes of the model's that the decoder cut at the length cap while a
 * time shift passed: each ends at its cap. */
static void find_capped(continuation *c)
{
    double cap = c->spec.play.max_note_ms / 1000.0;
    for (int p = 0; p < 128; p++)
        if (c->model_on[p] && c->ctx.pos.dec.onset[p] < 0) {
            c->model_on[p] = 0;
            c->cut_at[p] = c->onset[p] + cap;
            c->n_cut++;
            c->n_capped++;
        }
}

/* The earliest note ended without the model's NOTE_OFF, as an event. */
static void take_cut(continuation *c, cont_event *out)
{
    int best = -1;
    for (int p = 0; p < 128; p++)
        if (c->cut_at[p] >= 0 && (best < 0 || c->cut_at[p] < c->cut_at[best]))
            best = p;
    *out = (cont_event){ c->cut_at[best], CONT_NOTE_OFF, (uint8_t)best, 0 };
    c->cut_at[best] = -1;
    c->n_cut--;
}

/* Keeps the ids sampled, for the debug log (a continuation longer than the
 * buffer can grow to keeps its first ones). */
static void remember(continuation *c, int id)
{
    if (c->n_sampled == c->cap_sampled) {
        int cap = c->cap_sampled ? c->cap_sampled * 2 : 1024;
        uint16_t *p = cap <= 1 << 20 ? realloc(c->sampled, sizeof *p * (size_t)cap) : NULL;
        if (!p)
            return;
        c->sampled = p;
        c->cap_sampled = cap;
    }
    c->sampled[c->n_sampled++] = (uint16_t)id;
}

/* SRC_TIME, SRC_PITCH, W into A's sources, kept most attended first. */
static void add_source(cont_attention *a, double src_time, int src_pitch, float w)
{
    int k;
    if (a->n < CONT_ATTENTION_TOP)
        k = a->n++;
    else if (w > a->weight[CONT_ATTENTION_TOP - 1])
        k = CONT_ATTENTION_TOP - 1;     /* the least attended one goes */
    else
        return;
    for (; k > 0 && a->weight[k - 1] < w; k--) {
        a->src_time[k] = a->src_time[k - 1];
        a->src_pitch[k] = a->src_pitch[k - 1];
        a->weight[k] = a->weight[k - 1];
    }
    a->src_time[k] = src_time;
    a->src_pitch[k] = (uint8_t)src_pitch;
    a->weight[k] = w;
}

/* The note-on PITCH about to be handed out: the earlier note-ons the last
 * decode's last layer attended to most (its probabilities, in st.scores,
 * are the ones whose output chose this note), walked back through the
 * context's ids, which are the cache's (distance d: hist[n - 1 - d]). */
static void note_attention(continuation *c, int pitch)
{
    const model_state *s = &c->st;
    const model_config *mc = &s->m->cfg;
    int nk = s->n, n = c->ctx.pos.n_hist, C = mc->context;
    if (nk <= 0 || c->batch)
        return;
    int newest = s->memory == MODEL_MEMORY_STREAM ? (int)((s->pos - 1) % C) : s->n - 1;
    double base = c->ctx.first_step >= 0 ? now_s(c) : 0, back = 0;
    cont_attention a = { .time = base, .pitch = (uint8_t)pitch };
    for (int d = 0; d < nk && d < n; d++) {
        int val;
        event_type t = vocab_decode(c->v, c->ctx.hist[n - 1 - d], &val);
        if (t == EVENT_NOTE_ON) {
            int slot = ((newest - d) % nk + nk) % nk;
            float w = 0;
            for (int h = 0; h < mc->n_heads; h++)
                w += s->scores[(size_t)h * C + (size_t)slot];
            add_source(&a, base - back, val, w / (float)mc->n_heads);
        } else if (t == EVENT_TIME_SHIFT) {
            back += val * c->v->step_ms / 1000.0;
        }
    }
    if (c->n_attention == c->cap_attention) {
        int cap = c->cap_attention ? 2 * c->cap_attention : 256;
        cont_attention *p = realloc(c->attention, sizeof *p * (size_t)cap);
        if (!p)
            return;
        c->attention = p;
        c->cap_attention = cap;
    }
    c->attention[c->n_attention++] = a;
}

/* ln of the sum of exp(L[i]) over the N ids MASK allows (all of them
 * when MASK is NULL). */
static double log_sum_exp(const float *l, const uint8_t *mask, int n)
{
    double top = -1e30, sum = 0;
    for (int i = 0; i < n; i++)
        if ((!mask || mask[i] != SAMPLER_FORBIDDEN) && l[i] > top)
            top = l[i];
    for (int i = 0; i < n; i++)
        if (!mask || mask[i] != SAMPLER_FORBIDDEN)
            sum += exp(l[i] - top);
    return sum > 0 ? top + log(sum) : top;
}

/* One id sampled after the mask and the nudges; its log-likelihood under
 * the model's own odds and under the nudged ones is added up (what the
 * candidates are scored by). */
static int sample(continuation *c)
{
    float *logits = next_logits(c);
    int n = c->smp.vocab_size;
    fill_mask(c);
    if (c->batch)
        memcpy(c->raw, logits, sizeof(float) * (size_t)n);
    perf_follow_apply(&c->ctx.pos.follow, c->v, context_time(&c->ctx), logits);
    steer(c, logits);
    int id = sampler_sample(&c->smp, logits), p;
    if (c->want_attention && vocab_decode(c->v, id, &p) == EVENT_NOTE_ON)
        note_attention(c, p);
    if (c->batch) {     /* only candidates are scored: the live single path pays nothing */
        c->loglik_model += c->raw[id] - log_sum_exp(c->raw, NULL, n);
        c->loglik_nudged += logits[id] - log_sum_exp(logits, sampler_mask(&c->smp), n);
    }
    remember(c, id);
    return id;
}

/* The note event ID (of value P, type T) as what the continuation hands
 * out; it is decoded at the next call, after the event went out. */
static void hand_out_note(continuation *c, int id, event_type t, int p, cont_event *out)
{
    c->pending = id;
    if (c->ctx.first_step < 0)
        context_first_note(&c->ctx);
    c->model_on[p] = t == EVENT_NOTE_ON;
    c->onset[p] = now_s(c);
    int bin = c->ctx.pos.emit.bin < 0 ? 15 : c->ctx.pos.emit.bin;
    int vel = t == EVENT_NOTE_ON ? bin_to_velocity(c->v, bin) : 0;
    if (vel < 1 && t == EVENT_NOTE_ON)
        vel = 64;
    *out = (cont_event){ now_s(c), t == EVENT_NOTE_ON ? CONT_NOTE_ON : CONT_NOTE_OFF, (uint8_t)p, (uint8_t)vel };
}

/* A NOTE_ON of a pitch the model struck at this very step: the same
 * strike twice (a note of no length, then the same pitch again), which
 * sounds as one; it enters the context but is not handed out, so that
 * every consumer (serve's outputs, continue's file) plays one note. */
static int restrike_now(const continuation *c, event_type t, int p)
{
    return t == EVENT_NOTE_ON && c->model_on[p] && c->onset[p] == now_s(c);
}

/* The next event before the length limits: 1, 0 (no note in GUARD_IDS
 * ids; an EOS, which the mask forbids) or -1. */
static int next_event(continuation *c, cont_event *out)
{
    if (flush_pending(c) < 0)
        return -1;
    for (int guard = 0; guard < GUARD_IDS; guard++) {
        if (c->n_cut > 0) {
            take_cut(c, out);
            return 1;
        }
        int id = sample(c), p;
        event_type t = vocab_decode(c->v, id, &p);
        if (t == EVENT_EOS)
            return 0;
        if ((t == EVENT_NOTE_ON && !restrike_now(c, t, p)) || (t == EVENT_NOTE_OFF && c->model_on[p])) {
            hand_out_note(c, id, t, p, out);
            return 1;
        }
        /* time, velocity, or a note of the player's: not ours to hand out */
        if (context_feed(&c->ctx, id) < 0)
            return -1;
        if (t != EVENT_TIME_SHIFT || c->ctx.first_step < 0)
            continue;
        find_capped(c);
        if (c->n_cut > 0)
            continue;               /* the capped notes' note-offs first */
        if (now_s(c) > c->spec.seconds)
            return 0;               /* silent past its length */
        if (c->spec.duet) {
            *out = (cont_event){ now_s(c), CONT_TIME, 0, 0 };
            return 1;
        }
    }
    return 0;
}

int continuation_next(continuation *c, cont_event *out)
{
    if (c->queue) {             /* a chosen candidate's events first */
        if (c->i_queue < c->n_queue) {
            *out = c->queue[c->i_queue++];
            if (out->time <= c->spec.seconds)
                return 1;
            c->queue = NULL;    /* a shorter answer than the candidate's */
            return 0;
        }
        c->queue = NULL;
        if (c->queue_ended)
            return 0;
    }
    int rc = next_event(c, out);
    if (rc <= 0)
        return rc;
    if (out->time > c->spec.seconds || ++c->n_out > c->spec.max_events)
        return 0;
    return 1;
}

/* The context's clock up to continuation time T (from its first note). */
static int feed_until(continuation *c, double t)
{
    const vocab *v = c->v;
    int64_t want = c->ctx.first_step + (int64_t)(t * 1000.0 / v->step_ms + 0.5);
    while (c->ctx.pos.emit.step < want) {
        int64_t k = want - c->ctx.pos.emit.step;
        if (context_feed(&c->ctx, vocab_id(v, EVENT_TIME_SHIFT, k > v->n_time_shifts ? v->n_time_shifts : (int)k)) < 0)
            return -1;
    }
    return 0;
}

/* One event of a take into the context as the model's. */
static int feed_event(continuation *c, const cont_event *e)
{
    const vocab *v = c->v;
    if (feed_until(c, e->time) < 0)
        return -1;
    if (e->kind == CONT_NOTE_ON) {
        int bin = velocity_to_bin(v, e->velocity);
        if (bin != c->ctx.pos.emit.bin && context_feed(&c->ctx, vocab_id(v, EVENT_VELOCITY, bin)) < 0)
            return -1;
        c->model_on[e->pitch] = 1;
        return context_feed(&c->ctx, vocab_id(v, EVENT_NOTE_ON, e->pitch));
    }
    if (e->kind == CONT_NOTE_OFF && c->ctx.pos.dec.onset[e->pitch] >= 0) {
        c->model_on[e->pitch] = 0;
        return context_feed(&c->ctx, vocab_id(v, EVENT_NOTE_OFF, e->pitch));
    }
    return 0;
}

int continuation_replay(continuation *c, double at, const cont_event *ev, int n)
{
    if (flush_pending(c) < 0 || context_begin(&c->ctx, at) < 0)
        return -1;
    memset(c->model_on, 0, sizeof c->model_on);
    context_first_note(&c->ctx);
    double last = 0;
    for (int i = 0; i < n; i++) {
        if (ev[i].pitch >= c->v->min_pitch && ev[i].pitch <= c->v->max_pitch && feed_event(c, &ev[i]) < 0)
            return -1;
        last = ev[i].time;
    }
    if (feed_until(c, last + CONT_TAIL_S) < 0)
        return -1;
    c->n_sampled = 0;
    continuation_end(c);        /* what it left sounding ends in the context */
    return 0;
}

/* The ids sampled, 32 to a line, at debug level. */
static void log_sampled(const continuation *c)
{
    if (log_get_level() < LOG_LEVEL_DEBUG)
        return;
    char line[32 * 6 + 64];
    for (int i = 0; i < c->n_sampled; i += 32) {
        size_t len = (size_t)snprintf(line, sizeof line, "continuation: ids %d..:", i);
        for (int k = i; k < c->n_sampled && k < i + 32 && len < sizeof line; k++)
            len += (size_t)snprintf(line + len, sizeof line - len, " %u", (unsigned)c->sampled[k]);
        log_debug("%s", line);
    }
    log_debug("continuation: %d ids sampled", c->n_sampled);
}

void continuation_end(continuation *c)
{
    log_sampled(c);
    c->n_sampled = 0;
    context_end(&c->ctx);
    if (flush_pending(c) < 0)
        return;
    /* Notes the continuation left sounding end in the context too, as they
     * do on the outputs. */
    for (int p = 0; p < 128; p++)
        if (c->model_on[p] && c->ctx.pos.dec.onset[p] >= 0) {
            if (context_feed(&c->ctx, vocab_id(c->v, EVENT_NOTE_OFF, p)) < 0)
                return;
            c->model_on[p] = 0;
        }
}

/* The context is rebuilt from the phrase end's last events by one prefill
 * (in stream memory a fresh window: the rolled states are gone). */
void continuation_rewind(continuation *c)
{
    c->pending = -1;
    context_rewind(&c->ctx);
    model_state_reset(&c->st);
    int n = c->ctx.pos.n_hist;
    if (n > 0 && model_prefill(&c->st, c->ctx.hist, n, NULL) < 0)
        log_warn("re-roll: cannot rebuild the model's context");
}

/* ---- candidates: forks that decode in a batch (play/candidates.h) ---- */

int continuation_fork_init(continuation *dst, const continuation *src)
{
    memset(dst, 0, sizeof *dst);
    sampling_settings o;
    sampling_default(&o);
    int n_ids = src->st.m->cfg.vocab_size;
    dst->ctx.hist = calloc((size_t)src->ctx.n_ctx, sizeof *dst->ctx.hist);
    dst->raw = malloc(sizeof(float) * (size_t)n_ids);
    dst->have_smp = sampler_init(&dst->smp, n_ids, &o, 1) == 0;
    if (!dst->ctx.hist || !dst->raw || !dst->have_smp) {
        log_error("continuation: out of memory for a candidate");
        continuation_fork_free(dst);
        return -1;
    }
    return 0;
}

void continuation_fork_free(continuation *dst)
{
    free(dst->ctx.hist);
    note_list_free(&dst->ctx.done);
    if (dst->have_smp)
        sampler_free(&dst->smp);
    free(dst->raw);
    free(dst->sampled);
    memset(dst, 0, sizeof *dst);
}

/* What a fork owns (continuation_fork_init), kept across a struct copy. */
typedef struct owned {
    int *hist;
    note_list done;
    sampler smp;
    float *raw;
    uint16_t *sampled;
    int cap_sampled;
    cont_attention *attention;      /* a fork has none: only a home draws it */
    int n_attention, cap_attention, want_attention;
} owned;

static owned own(const continuation *c)
{
    return (owned){ c->ctx.hist, c->ctx.done, c->smp, c->raw, c->sampled, c->cap_sampled,
                    c->attention, c->n_attention, c->cap_attention, c->want_attention };
}

/* C, a struct copy of FROM, takes back what it owns: its buffers, with
 * FROM's context ids copied in; its context feeds it, not FROM. */
static void restore(continuation *c, const owned *o, const continuation *from)
{
    c->ctx.hist = o->hist;
    memcpy(c->ctx.hist, from->ctx.hist, sizeof *c->ctx.hist * (size_t)from->ctx.pos.n_hist);
    c->ctx.done = o->done;
    c->ctx.done.n = 0;
    c->ctx.user = c;
    c->smp = o->smp;
    c->raw = o->raw;
    c->sampled = o->sampled;
    c->cap_sampled = o->cap_sampled;
    c->n_sampled = 0;
    c->attention = o->attention;
    c->n_attention = o->n_attention;
    c->cap_attention = o->cap_attention;
    c->want_attention = o->want_attention;
}

void continuation_fork(continuation *dst, const continuation *src, model_batch *batch, int seq, uint64_t seed)
{
    owned o = own(dst);
    *dst = *src;
    restore(dst, &o, src);
    memset(&dst->st, 0, sizeof dst->st);    /* a candidate decodes in the batch, never here */
    dst->st.m = src->st.m;
    sampler_configure(&dst->smp, &src->spec.play.sampling, seed);   /* src's settings: valid */
    dst->spec.seed = seed;
    dst->batch = batch;
    dst->seq = seq;
    dst->queued = -1;
    dst->guard = 0;
    dst->queue = NULL;
    dst->loglik_model = dst->loglik_nudged = 0;
    model_batch_fork(batch, seq);
}

/* The end of the step (after an event): the length limits, as
 * continuation_next's. */
static int step_event(continuation *c, const cont_event *out)
{
    if (out->time > c->spec.seconds || ++c->n_out > c->spec.max_events)
        return CONT_STEP_END;
    c->guard = 0;
    return CONT_STEP_EVENT;
}

/* next_event's loop, one sample (or one decode) at a time. */
int continuation_step(continuation *c, cont_event *out)
{
    if (c->pending >= 0)
        return flush_pending(c) < 0 ? -1 : CONT_STEP_DECODE;
    if (c->n_cut > 0) {
        take_cut(c, out);
        return step_event(c, out);
    }
    if (c->guard++ >= GUARD_IDS)
        return CONT_STEP_END;
    int id = sample(c), p;
    event_type t = vocab_decode(c->v, id, &p);
    if (t == EVENT_EOS)
        return CONT_STEP_END;
    if ((t == EVENT_NOTE_ON && !restrike_now(c, t, p)) || (t == EVENT_NOTE_OFF && c->model_on[p])) {
        hand_out_note(c, id, t, p, out);
        return step_event(c, out);
    }
    if (context_feed(&c->ctx, id) < 0)
        return -1;
    if (t != EVENT_TIME_SHIFT || c->ctx.first_step < 0)
        return CONT_STEP_DECODE;
    find_capped(c);
    if (c->n_cut == 0 && now_s(c) > c->spec.seconds)
        return CONT_STEP_END;       /* silent past its length (the id fed still waits in
                                       queued: the model decodes it, as next_event's does) */
    return CONT_STEP_DECODE;        /* (no CONT_TIME: candidates are not for duets) */
}

int continuation_adopt(continuation *home, const continuation *cand, const cont_event *ev, int n, int ended)
{
    owned o = own(home);
    model_state st = home->st;      /* holds the candidate's cache already */
    *home = *cand;
    restore(home, &o, cand);
    home->st = st;
    if (sampler_configure(&home->smp, &cand->smp.set, cand->smp.seed) < 0)
        return -1;
    home->smp.rng = cand->smp.rng;
    for (int i = 0; i < cand->n_sampled; i++)
        remember(home, cand->sampled[i]);
    home->batch = NULL;
    home->seq = -1;
    home->queued = -1;
    home->queue = ev;
    home->n_queue = n;
    home->i_queue = 0;
    home->queue_ended = ended;
    if (cand->queued >= 0 && !model_decode(&home->st, cand->queued))
        return -1;
    return 0;
}
