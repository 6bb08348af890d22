/* continuation.c: one continuation of the Music Transformer: the context fed and decoded, the mask, the sampling, the caps and lengths. */
#include "play/continuation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/perf.h"
#include "model/batch.h"
#include "play/odds.h"
#include "util/log.h"

/* The codec fills the sampler's mask (perf_decoder_next_mask): same values. */
_Static_assert((int)PERF_NEXT_FORBIDDEN == (int)SAMPLER_FORBIDDEN && (int)PERF_NEXT_PROTECTED == (int)SAMPLER_PROTECTED,
               "the codec's mask values are the sampler's");

#define GUARD_IDS 4096      /* ids without a note: the continuation ends (cannot happen
                               with a trained model: time shifts are capped) */

/* Seconds from the continuation's first note to the current position. */
static double now_s(const continuation *c)
{
    return (double)(c->ctx.pos.emit.step - c->ctx.first_step) * c->v->step_ms / 1000.0;
}

/* One id into the KV cache (the context calls it for every id; offline the
 * primer's wait for one prefill).  A player's NOTE_ON or NOTE_OFF on a pitch
 * the model holds (a duet) ends the model's note in the context (a pitch
 * sounds once there), so the model can no longer end it: its note-off goes
 * out with the next call of next. */
int continuation_decode_id(void *user, int id)
{
    continuation *c = user;
    cont_state *s = &c->s;
    int p;
    event_type t = vocab_decode(c->v, id, &p);
    if (s->hearing && (t == EVENT_NOTE_ON || t == EVENT_NOTE_OFF) && s->model_on[p]) {
        s->model_on[p] = 0;
        s->cut_at[p] = now_s(c);
        s->n_cut++;
    }
    if (s->prefill)
        return 0;
    if (s->batch) {             /* a candidate: the batch decodes it with the others */
        if (s->queued >= 0) {
            log_error("continuation: candidate %d fed two ids in one step", s->seq);
            return -1;
        }
        s->queued = id;
        return 0;
    }
    return model_decode(&c->own.st, id) ? 0 : -1;
}

int continuation_init(continuation *c, model *m, const vocab *v, int n_ctx, int threads, model_memory memory,
                      double max_note_s, int prefill)
{
    memset(c, 0, sizeof *c);
    c->v = v;
    c->s.pending = -1;
    c->s.queued = -1;
    c->s.seq = -1;
    c->s.prefill = prefill;
    for (int p = 0; p < 128; p++)
        c->s.cut_at[p] = -1;
    c->own.raw = malloc(sizeof(float) * (size_t)m->cfg.vocab_size);
    if (!c->own.raw) {
        log_error("continuation: out of memory");
        return -1;
    }
    if (model_state_init(&c->own.st, m, threads) < 0) {
        free(c->own.raw);
        return -1;
    }
    model_state_set_memory(&c->own.st, memory);
    if (context_init(&c->ctx, v, n_ctx, max_note_s, continuation_decode_id, c) < 0) {
        model_state_free(&c->own.st);
        free(c->own.raw);
        return -1;
    }
    context_follow_memory(&c->ctx, &m->player);
    return 0;
}

void continuation_free(continuation *c)
{
    if (c->own.have_smp)
        sampler_free(&c->own.smp);
    context_free(&c->ctx);
    model_state_free(&c->own.st);
    free(c->own.sampled);
    free(c->own.raw);
    free(c->own.attention);
    free(c->own.heads);
    memset(c, 0, sizeof *c);
}

/* Feeds the note event handed out last, if any. */
static int flush_pending(continuation *c)
{
    int id = c->s.pending;
    c->s.pending = -1;
    c->ctx.next_tag = c->s.pending_tag;
    c->s.pending_tag = 0;
    return id >= 0 ? context_feed(&c->ctx, id) : 0;
}

/* In window memory a full window slides by prefilling 3/4 of it again:
 * tens of ms for the default model, more for big ones.  Inside a
 * continuation's first events that would delay notes that are due soon,
 * so it slides while the player plays, when fewer than context/8 events of
 * room are left.  Stream memory never slides: a full cache rolls. */
static int slide_early(continuation *c)
{
    const model_state *st = &c->own.st;
    int room = st->m->cfg.context - st->n;
    if (c->s.prefill || st->memory != MODEL_MEMORY_WINDOW || room >= st->m->cfg.context / 8)
        return 0;
    return model_slide(&c->own.st);
}

int continuation_hear(continuation *c, const smf_event *msg)
{
    if (flush_pending(c) < 0)
        return -1;
    c->s.hearing = 1;
    int rc = context_hear(&c->ctx, msg);
    c->s.hearing = 0;
    return rc < 0 ? -1 : slide_early(c);
}

int continuation_hear_until(continuation *c, double t)
{
    if (flush_pending(c) < 0)
        return -1;
    c->s.hearing = 1;
    int rc = context_hear_until(&c->ctx, t);
    c->s.hearing = 0;
    return rc;
}

/* Offline: the context's ids enter the model in one prefill, as a slid
 * window would hold them (the last `keep`), or in stream memory as many as
 * it holds. */
static int prefill_heard(continuation *c)
{
    model_state *st = &c->own.st;
    int full = st->memory == MODEL_MEMORY_STREAM ? st->m->cfg.context : st->keep;
    int n = c->ctx.pos.n_hist < full ? c->ctx.pos.n_hist : full;
    c->s.prefill = 0;
    model_state_reset(st);
    return n > 0 ? model_prefill(st, c->ctx.hist + c->ctx.pos.n_hist - n, n, NULL) : 0;
}

/* The sampler, allocated once and re-seeded per continuation. */
static int configure_sampler(continuation *c, const cont_spec *s)
{
    if (c->own.have_smp)
        return sampler_configure(&c->own.smp, &s->play.sampling, s->seed);
    c->own.have_smp = sampler_init(&c->own.smp, c->own.st.m->cfg.vocab_size, &s->play.sampling, s->seed) == 0;
    return c->own.have_smp ? 0 : -1;
}

int continuation_begin(continuation *c, double at, const cont_spec *s)
{
    const play_settings *p = &s->play;
    cont_state *cs = &c->s;
    if (flush_pending(c) < 0 || configure_sampler(c, s) < 0)
        return -1;
    cs->spec = *s;
    /* a duet keeps the pace and key of its own (the player plays along),
     * unless a knob asks for a density or a key */
    c->ctx.pos.follow.pace = s->duet && p->density == 1 ? 0.0f : (float)p->sampling.pace;
    c->ctx.pos.follow.key_pull = s->duet && p->key.kind == PLAY_KEY_AUTO ? 0.0f : (float)p->sampling.key_pull;
    c->ctx.pos.dec.max_note_s = p->max_note_ms / 1000.0;
    if (context_begin(&c->ctx, at) < 0)
        return -1;
    if (cs->prefill && prefill_heard(c) < 0)
        return -1;
    knobs_begin(&cs->heard, &c->ctx.pos.follow, p, context_time(&c->ctx));
    memset(cs->model_on, 0, sizeof cs->model_on);
    for (int n = 0; n < 128; n++)
        cs->cut_at[n] = -1;
    cs->n_cut = 0;
    cs->n_out = 0;
    cs->n_capped = 0;
    c->own.n_sampled = 0;
    cs->loglik_model = cs->loglik_nudged = 0;
    cs->guard = 0;
    cs->queue = NULL;
    c->own.n_attention = 0;
    c->own.n_heads = c->own.i_heads = 0;
    return 0;
}

/* ---- the mask and the sampling ---- */

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
    const play_settings *ps = &c->s.spec.play;
    const knobs_heard *h = &c->s.heard;
    sampler *smp = &c->own.smp;
    int others = 0;
    for (int p = 0; p < 128; p++)
        others += x->pos.dec.onset[p] >= 0 && !c->s.model_on[p];
    perf_decoder_next_mask(&x->pos.dec, ps->max_held + others, 0, !smp->set.filter_time, sampler_mask(smp),
                           smp->vocab_size);
    if (ps->pitch_low > v->min_pitch || ps->pitch_high < v->max_pitch || h->have_scale)
        for (int p = v->min_pitch; p <= v->max_pitch; p++)
            if (p < ps->pitch_low || p > ps->pitch_high || (h->have_scale && !h->scale[p % 12]))
                sampler_forbid(smp, vocab_id(v, EVENT_NOTE_ON, p));
    if (x->first_step >= 0)
        return;
    for (int s = 1; s <= v->n_time_shifts; s++)
        sampler_forbid(smp, vocab_id(v, EVENT_TIME_SHIFT, s));
    if (x->pos.emit.bin >= 0)
        for (int b = 0; b < v->n_velocity_bins; b++)
            sampler_forbid(smp, vocab_id(v, EVENT_VELOCITY, b));
}

void continuation_remember(continuation *c, int id)
{
    cont_own *o = &c->own;
    if (o->n_sampled == o->cap_sampled) {   /* past the cap, the first ones are kept */
        int cap = o->cap_sampled ? o->cap_sampled * 2 : 1024;
        uint16_t *p = cap <= 1 << 20 ? realloc(o->sampled, sizeof *p * (size_t)cap) : NULL;
        if (!p)
            return;
        o->sampled = p;
        o->cap_sampled = cap;
    }
    o->sampled[o->n_sampled++] = (uint16_t)id;
}

/* The attention of the note-on PITCH about to be handed out, kept (a
 * candidate's decodes are the batch's: it keeps none). */
static void keep_attention(continuation *c, int pitch)
{
    cont_own *o = &c->own;
    cont_attention a;
    double now = c->ctx.first_step >= 0 ? now_s(c) : 0;
    if (c->s.batch || !attention_of_note(&a, &o->st, c->v, c->ctx.hist, c->ctx.pos.n_hist, now, pitch))
        return;
    if (o->n_attention == o->cap_attention) {
        int cap = o->cap_attention ? 2 * o->cap_attention : 256;
        cont_attention *p = realloc(o->attention, sizeof *p * (size_t)cap);
        if (!p)
            return;
        o->attention = p;
        o->cap_attention = cap;
    }
    o->attention[o->n_attention++] = a;
}

/* One id sampled after the mask, the codec's nudges and the knobs; its
 * log-likelihood under the model's own odds and under the nudged ones is
 * added up (what the candidates are scored by). */
static int sample(continuation *c)
{
    cont_state *s = &c->s;
    float *logits = s->batch ? model_batch_logits(s->batch, s->seq) : c->own.st.logits;
    float *raw = c->own.raw;
    const uint8_t *mask = sampler_mask(&c->own.smp);
    int n = c->own.smp.vocab_size;
    fill_mask(c);
    memory_mix(&c->ctx.pos.memory, logits, n);     /* the model's odds: the player's memory's part in them */
    if (s->batch)
        memcpy(raw, logits, sizeof(float) * (size_t)n);
    perf_follow_apply(&c->ctx.pos.follow, c->v, context_time(&c->ctx), logits);
    knobs_view k = { c->v, mask, &c->ctx.pos.follow, &c->ctx.pos.dec, s->model_on, &s->heard };
    knobs_steer(&s->spec.play, &k, logits);
    int id = sampler_sample(&c->own.smp, logits), p;
    if (c->own.want_attention && vocab_decode(c->v, id, &p) == EVENT_NOTE_ON)
        keep_attention(c, p);
    if (s->batch) {     /* only candidates are scored: the live single path pays nothing */
        s->loglik_model += raw[id] - odds_log_sum_exp(raw, NULL, n);
        s->loglik_nudged += logits[id] - odds_log_sum_exp(logits, mask, n);
    }
    continuation_remember(c, id);
    return id;
}

/* ---- the events handed out ---- */

/* Notes of the model's that the decoder cut at the length cap while a
 * time shift passed: each ends at its cap. */
static void find_capped(continuation *c)
{
    cont_state *s = &c->s;
    double cap = s->spec.play.max_note_ms / 1000.0;
    for (int p = 0; p < 128; p++)
        if (s->model_on[p] && c->ctx.pos.dec.onset[p] < 0) {
            s->model_on[p] = 0;
            s->cut_at[p] = s->onset[p] + cap;
            s->n_cut++;
            s->n_capped++;
        }
}

/* The earliest note ended without the model's NOTE_OFF, as an event. */
static void take_cut(continuation *c, cont_event *out)
{
    cont_state *s = &c->s;
    int best = -1;
    for (int p = 0; p < 128; p++)
        if (s->cut_at[p] >= 0 && (best < 0 || s->cut_at[p] < s->cut_at[best]))
            best = p;
    *out = (cont_event){ s->cut_at[best], CONT_NOTE_OFF, (uint8_t)best, 0, 0 };
    s->cut_at[best] = -1;
    s->n_cut--;
}

/* The note event ID (of value P, type T) as what the continuation hands
 * out; it enters the context at the next step, after the event went out. */
static void hand_out_note(continuation *c, int id, event_type t, int p, cont_event *out)
{
    cont_state *s = &c->s;
    s->pending = id;
    if (c->ctx.first_step < 0)
        context_first_note(&c->ctx);
    s->model_on[p] = t == EVENT_NOTE_ON;
    s->onset[p] = now_s(c);
    int bin = c->ctx.pos.emit.bin < 0 ? 15 : c->ctx.pos.emit.bin;
    int vel = t == EVENT_NOTE_ON ? bin_to_velocity(c->v, bin) : 0;
    if (vel < 1 && t == EVENT_NOTE_ON)
        vel = 64;
    *out = (cont_event){ now_s(c), t == EVENT_NOTE_ON ? CONT_NOTE_ON : CONT_NOTE_OFF, (uint8_t)p, (uint8_t)vel, 0 };
    if (t == EVENT_NOTE_ON) {
        out->note = s->pending_tag = CONTEXT_MODEL_TAG | (s->next_note++ & ~CONTEXT_MODEL_TAG);
        if (c->own.watch)
            continuation_capture_heads(c, out->note, p);
    }
}

/* A NOTE_ON of a pitch the model struck at this very step: the same
 * strike twice (a note of no length, then the same pitch again), which
 * sounds as one; it enters the context but is not handed out, so that
 * every consumer (serve's outputs, continue's file) plays one note. */
static int restrike_now(const continuation *c, event_type t, int p)
{
    return t == EVENT_NOTE_ON && c->s.model_on[p] && c->s.onset[p] == now_s(c);
}

/* The event OUT handed out: the length limits (its end past spec.seconds
 * or at event max_events + 1), and the guard counts again. */
static int step_event(continuation *c, const cont_event *out)
{
    cont_state *s = &c->s;
    if (out->time > s->spec.seconds || ++s->n_out > s->spec.max_events)
        return CONT_STEP_END;
    s->guard = 0;
    return CONT_STEP_EVENT;
}

/* A time shift entered the context: the notes it capped end first; then
 * past its length the continuation ends (silent: the shift fed still
 * waits in s.queued for a candidate's batch), and a duet hands the time
 * out (CONT_TIME). */
static int step_time(continuation *c, cont_event *out)
{
    find_capped(c);
    if (c->s.n_cut > 0)
        return CONT_STEP_DECODE;
    if (now_s(c) > c->s.spec.seconds)
        return CONT_STEP_END;
    if (!c->s.spec.duet)
        return CONT_STEP_DECODE;
    *out = (cont_event){ now_s(c), CONT_TIME, 0, 0, 0 };
    return step_event(c, out);
}

int continuation_step(continuation *c, cont_event *out)
{
    cont_state *s = &c->s;
    if (s->pending >= 0)
        return flush_pending(c) < 0 ? -1 : CONT_STEP_DECODE;
    if (s->n_cut > 0) {
        take_cut(c, out);
        return step_event(c, out);
    }
    if (s->guard++ >= GUARD_IDS)
        return CONT_STEP_END;
    int id = sample(c), p;
    event_type t = vocab_decode(c->v, id, &p);
    if (t == EVENT_EOS)
        return CONT_STEP_END;
    if ((t == EVENT_NOTE_ON && !restrike_now(c, t, p)) || (t == EVENT_NOTE_OFF && s->model_on[p])) {
        hand_out_note(c, id, t, p, out);
        return step_event(c, out);
    }
    /* time, velocity, or a note of the player's: not ours to hand out */
    if (context_feed(&c->ctx, id) < 0)
        return -1;
    if (t != EVENT_TIME_SHIFT || c->ctx.first_step < 0)
        return CONT_STEP_DECODE;
    return step_time(c, out);
}

/* A chosen candidate's events first: 1 with one in OUT, 0 at the answer's
 * end, -1 when they are spent and the continuation samples on. */
static int next_queued(continuation *c, cont_event *out)
{
    cont_state *s = &c->s;
    if (!s->queue)
        return -1;
    if (s->i_queue < s->n_queue) {
        *out = s->queue[s->i_queue++];
        if (out->time <= s->spec.seconds)
            return 1;
        s->queue = NULL;    /* a shorter answer than the candidate's */
        return 0;
    }
    s->queue = NULL;
    return s->queue_ended ? 0 : -1;
}

int continuation_next(continuation *c, cont_event *out)
{
    int rc = next_queued(c, out);
    if (rc >= 0)
        return rc;
    for (;;) {
        rc = continuation_step(c, out);
        if (rc != CONT_STEP_DECODE)     /* the single path has decoded the id already */
            return rc;
    }
}

/* ---- a take replayed, the end, a re-roll ---- */

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
        c->s.model_on[e->pitch] = 1;
        return context_feed(&c->ctx, vocab_id(v, EVENT_NOTE_ON, e->pitch));
    }
    if (e->kind == CONT_NOTE_OFF && c->ctx.pos.dec.onset[e->pitch] >= 0) {
        c->s.model_on[e->pitch] = 0;
        return context_feed(&c->ctx, vocab_id(v, EVENT_NOTE_OFF, e->pitch));
    }
    return 0;
}

int continuation_replay(continuation *c, double at, const cont_event *ev, int n)
{
    if (flush_pending(c) < 0 || context_begin(&c->ctx, at) < 0)
        return -1;
    memset(c->s.model_on, 0, sizeof c->s.model_on);
    context_first_note(&c->ctx);
    double last = 0;
    for (int i = 0; i < n; i++) {
        if (ev[i].pitch >= c->v->min_pitch && ev[i].pitch <= c->v->max_pitch && feed_event(c, &ev[i]) < 0)
            return -1;
        last = ev[i].time;
    }
    if (feed_until(c, last + CONT_TAIL_S) < 0)
        return -1;
    c->own.n_sampled = 0;
    return continuation_end(c);     /* what it left sounding ends in the context */
}

/* The ids sampled, 32 to a line, at debug level. */
static void log_sampled(const continuation *c)
{
    const cont_own *o = &c->own;
    if (log_get_level() < LOG_LEVEL_DEBUG)
        return;
    char line[32 * 6 + 64];
    for (int i = 0; i < o->n_sampled; i += 32) {
        size_t len = (size_t)snprintf(line, sizeof line, "continuation: ids %d..:", i);
        for (int k = i; k < o->n_sampled && k < i + 32 && len < sizeof line; k++)
            len += (size_t)snprintf(line + len, sizeof line - len, " %u", (unsigned)o->sampled[k]);
        log_debug("%s", line);
    }
    log_debug("continuation: %d ids sampled", o->n_sampled);
}

/* Notes the continuation left sounding end in the context too, as they
 * do on the outputs. */
static int end_notes(continuation *c)
{
    int rc = 0;
    for (int p = 0; p < 128 && rc == 0; p++)
        if (c->s.model_on[p] && c->ctx.pos.dec.onset[p] >= 0) {
            rc = context_feed(&c->ctx, vocab_id(c->v, EVENT_NOTE_OFF, p));
            c->s.model_on[p] = rc < 0;
        }
    if (rc < 0)
        log_error("continuation: cannot end its notes in the model's context");
    return rc;
}

int continuation_end(continuation *c)
{
    log_sampled(c);
    c->own.n_sampled = 0;
    context_end(&c->ctx);
    return flush_pending(c) < 0 ? -1 : end_notes(c);
}

int continuation_keep_played(continuation *c, double played)
{
    context *x = &c->ctx;
    if (flush_pending(c) < 0)
        return -1;
    int keep = context_played_ids(x, played), from = x->mark.n_hist;
    if (keep < 0 || from + keep == x->pos.n_hist)
        return 0;
    log_debug("continuation: stopped %.3f s in: %d of its %d ids sounded, the rest leave the context", played,
              keep, x->pos.n_hist - from);
    int ended = !x->in_continuation;
    context_rewind(x);
    c->s.prefill = 1;                   /* the ids go in again, the cache in one prefill */
    int rc = 0;
    for (int k = 0; k < keep && rc == 0; k++)
        rc = context_feed(x, x->hist[from + k]);    /* hist[from + k] is rewritten with itself */
    if (rc < 0 || prefill_heard(c) < 0) {
        log_error("continuation: cannot take back what did not sound");
        return -1;
    }
    for (int p = 0; p < 128; p++)       /* the model's: sounding now, not at the mark */
        c->s.model_on[p] = x->open[p] && !x->mark_open[p];
    return ended ? end_notes(c) : 0;
}

/* The context is rebuilt from the phrase end's last events by one prefill
 * (in stream memory a fresh window: the rolled states are gone). */
int continuation_rewind(continuation *c)
{
    c->s.pending = -1;
    c->s.pending_tag = 0;
    context_rewind(&c->ctx);
    model_state_reset(&c->own.st);
    int n = c->ctx.pos.n_hist;
    if (n > 0 && model_prefill(&c->own.st, c->ctx.hist, n, NULL) < 0) {
        log_error("re-roll: cannot rebuild the model's context");
        return -1;
    }
    return 0;
}

/* The ids as a slid window holds them enter DST's cache in one prefill
 * (prefill_heard); the player's encoder (what it holds back: this step's
 * messages, the notes the pedal sustains) changes hands, SRC gets DST's
 * fresh one (and its own back when the prefill fails). */
int continuation_take_over(continuation *dst, continuation *src)
{
    if (src->ctx.in_continuation || src->s.batch || src->s.pending >= 0) {
        log_error("continuation: a context is taken over between continuations only");
        return -1;
    }
    if (dst->v != src->v || dst->ctx.n_ctx != src->ctx.n_ctx) {
        log_info("continuation: the new model has another vocabulary or context size (%d ids, "
                 "was %d): it starts from silence", dst->ctx.n_ctx, src->ctx.n_ctx);
        return 0;
    }
    context_copy(&dst->ctx, &src->ctx);
    context_follow_memory(&dst->ctx, &dst->own.st.m->player);     /* SRC's model's memory goes with it */
    perf_encoder *enc = dst->ctx.enc;
    dst->ctx.enc = src->ctx.enc;
    src->ctx.enc = enc;
    cont_state s = src->s;
    s.queue = NULL;
    s.n_queue = s.i_queue = 0;
    s.queued = -1;
    s.seq = -1;
    s.prefill = 1;
    dst->s = s;
    if (prefill_heard(dst) < 0) {
        src->ctx.enc = dst->ctx.enc;    /* SRC as it was */
        dst->ctx.enc = enc;
        log_error("continuation: the new model cannot take the context (%d ids)", dst->ctx.pos.n_hist);
        return -1;
    }
    log_debug("continuation: %d ids heard again by the new model", dst->ctx.pos.n_hist);
    return 0;
}

/* ---- what callers read ---- */

const cont_spec *continuation_spec(const continuation *c)
{
    return &c->s.spec;
}

void continuation_set_seconds(continuation *c, double seconds)
{
    c->s.spec.seconds = seconds;
}

int continuation_n_ids(const continuation *c)
{
    return c->ctx.pos.n_hist;
}

int continuation_n_sampled(const continuation *c)
{
    return c->own.n_sampled;
}

double continuation_session_time(const continuation *c)
{
    return context_time(&c->ctx) + (double)c->ctx.origin * c->v->step_ms / 1000.0;
}

model_state *continuation_model_state(continuation *c)
{
    return &c->own.st;
}

void continuation_keep_attention(continuation *c)
{
    c->own.want_attention = 1;
}

const cont_attention *continuation_attention(const continuation *c, int *n)
{
    *n = c->own.n_attention;
    return c->own.attention;
}
