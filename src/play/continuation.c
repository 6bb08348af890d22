/* continuation.c: one continuation of the Music Transformer: the context, the mask, the nudges, the sampler, the caps. */
#include "play/continuation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/perf.h"
#include "util/log.h"

/* The codec fills the sampler's mask (perf_decoder_next_mask): same values. */
_Static_assert((int)PERF_NEXT_FORBIDDEN == (int)SAMPLER_FORBIDDEN && (int)PERF_NEXT_PROTECTED == (int)SAMPLER_PROTECTED,
               "the codec's mask values are the sampler's");

#define GUARD_IDS 4096      /* ids without a note: the continuation ends (cannot happen
                               with a trained model: time shifts are capped) */

void play_default(play_settings *p)
{
    sampling_default(&p->sampling);
    p->max_held = PLAY_MAX_HELD;
    p->max_note_ms = PLAY_MAX_NOTE_MS;
}

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
    return model_decode(&c->st, id) ? 0 : -1;
}

int continuation_init(continuation *c, model *m, const vocab *v, int n_ctx, int threads, model_memory memory,
                      int prefill)
{
    memset(c, 0, sizeof *c);
    c->v = v;
    c->pending = -1;
    c->prefill = prefill;
    for (int p = 0; p < 128; p++)
        c->cut_at[p] = -1;
    if (model_state_init(&c->st, m, threads) < 0)
        return -1;
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

int continuation_begin(continuation *c, double at, const cont_spec *s)
{
    if (flush_pending(c) < 0 || configure_sampler(c, s) < 0)
        return -1;
    c->spec = *s;
    c->ctx.pos.follow.pace = s->duet ? 0.0f : (float)s->play.sampling.pace;
    c->ctx.pos.follow.key_pull = s->duet ? 0.0f : (float)s->play.sampling.key_pull;
    c->ctx.pos.dec.max_note_s = s->play.max_note_ms / 1000.0;
    if (context_begin(&c->ctx, at) < 0)
        return -1;
    if (c->prefill && prefill_heard(c) < 0)
        return -1;
    memset(c->model_on, 0, sizeof c->model_on);
    for (int p = 0; p < 128; p++)
        c->cut_at[p] = -1;
    c->n_cut = 0;
    c->n_out = 0;
    c->n_sampled = 0;
    return 0;
}

/* What may come next: the codec's rule (what the decoder would discard,
 * time shifts protected), at most max_held notes of the continuation's own
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

/* One id sampled after the mask and the nudges. */
static int sample(continuation *c)
{
    fill_mask(c);
    perf_follow_apply(&c->ctx.pos.follow, c->v, context_time(&c->ctx), c->st.logits);
    int id = sampler_sample(&c->smp, c->st.logits);
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
        if (t == EVENT_NOTE_ON || (t == EVENT_NOTE_OFF && c->model_on[p])) {
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
    int rc = next_event(c, out);
    if (rc <= 0)
        return rc;
    if (out->time > c->spec.seconds || ++c->n_out > c->spec.max_events)
        return 0;
    return 1;
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
