/* engine_model.c: the Music Transformer engine: player's events into the KV cache, sampled continuations out. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/perf.h"
#include "codec/vocab.h"
#include "daemon/context.h"
#include "daemon/engine.h"
#include "model/model.h"
#include "model/sampler.h"
#include "util/clock.h"
#include "util/log.h"

/* The codec fills the sampler's mask (perf_decoder_next_mask): same values. */
_Static_assert((int)PERF_NEXT_FORBIDDEN == (int)SAMPLER_FORBIDDEN && (int)PERF_NEXT_PROTECTED == (int)SAMPLER_PROTECTED,
               "the codec's mask values are the sampler's");

typedef struct model_engine {
    model        m;
    model_state  st;
    sampler      smp;
    int          have_smp;
    const vocab *v;
    context      ctx;           /* the context's token stream: the glue (context.h) */
    double       ms_per_event;  /* a decode step at open (warm_up) */
    int          max_held;
    /* the continuation being sampled */
    int          pending;       /* a sampled note event handed out before it was
                                   decoded (so it sounds one model step
                                   sooner); fed at the next call; -1: none */
    uint8_t      model_on[128]; /* pitches the continuation started and did not end */
    int          report_time;   /* next returns TIME_SHIFTs too (a duet) */
    int          hearing;       /* the ids coming in are the player's */
    uint8_t      cut[128];      /* a duet: the model's notes that a player's event on
                                   their pitch ended in the context; next hands out
                                   their note-offs first, so none is left sounding */
    int          n_cut;
} model_engine;

/* One id into the KV cache (the context calls it for every id).  A
 * player's NOTE_ON or NOTE_OFF on a pitch the model holds ends the model's
 * note in the context (a pitch sounds once there), and the model can no
 * longer end it: its note-off goes out with the next call of next. */
static int decode_id(void *user, int id)
{
    model_engine *e = user;
    int p;
    event_type t = vocab_decode(e->v, id, &p);
    if (e->hearing && (t == EVENT_NOTE_ON || t == EVENT_NOTE_OFF) && e->model_on[p]) {
        e->model_on[p] = 0;
        e->cut[p] = 1;
        e->n_cut++;
    }
    return model_decode(&e->st, id) ? 0 : -1;
}

/* The player's events that context_hear or context_hear_until let in. */
static int hear(model_engine *e, const smf_event *msg, double until)
{
    e->hearing = 1;
    int rc = msg ? context_hear(&e->ctx, msg) : context_hear_until(&e->ctx, until);
    e->hearing = 0;
    return rc;
}

/* Feeds the note event handed out last, if any. */
static int flush_pending(model_engine *e)
{
    int id = e->pending;
    e->pending = -1;
    return id >= 0 ? context_feed(&e->ctx, id) : 0;
}

/* One decode step pages the mapped weights in (38 MB for a 22 M model: 15
 * ms of page faults), so the first answer is not the late one; then
 * WARM_STEPS more measure what an event costs (for lookahead_ms = auto).
 * The cache is emptied again. */
#define WARM_STEPS 8
static int warm_up(model_engine *e)
{
    int id = vocab_id(e->v, EVENT_VELOCITY, 0);
    if (!model_decode(&e->st, id))
        return -1;
    double t0 = clock_now_seconds();
    for (int i = 0; i < WARM_STEPS; i++)
        if (!model_decode(&e->st, id))
            return -1;
    e->ms_per_event = (clock_now_seconds() - t0) * 1000.0 / WARM_STEPS;
    model_state_reset(&e->st);
    return 0;
}

static double me_ms_per_event(void *state)
{
    return ((model_engine *)state)->ms_per_event;
}

static int me_open(void **state, const config *cfg)
{
    model_engine *e = calloc(1, sizeof *e);
    if (!e) {
        log_error("cannot start the model engine: out of memory");
        return -1;
    }
    if (model_open(&e->m, cfg->model[0] ? cfg->model : NULL, &e->v) != 0) {
        free(e);
        return -1;
    }
    if (model_state_init(&e->st, &e->m, cfg->model_threads) < 0)
        goto fail;
    model_state_set_memory(&e->st, (model_memory)cfg->memory);
    if (warm_up(e) < 0) {
        model_state_free(&e->st);
        goto fail;
    }
    int n_ctx = cfg->context_events < e->m.cfg.context ? cfg->context_events : e->m.cfg.context;
    if (context_init(&e->ctx, e->v, n_ctx, cfg->max_note_ms / 1000.0, decode_id, e) < 0) {
        model_state_free(&e->st);
        goto fail;
    }
    e->max_held = cfg->max_held_notes;
    e->pending = -1;
    *state = e;
    return 0;
fail:
    model_free(&e->m);
    free(e);
    return -1;
}

static void me_close(void *state)
{
    model_engine *e = state;
    if (e->have_smp)
        sampler_free(&e->smp);
    context_free(&e->ctx);
    model_state_free(&e->st);
    model_free(&e->m);
    free(e);
}

static int me_listen(void *state, const smf_event *msg)
{
    model_engine *e = state;
    if (flush_pending(e) < 0 || hear(e, msg, 0) < 0)
        return -1;
    /* In window memory a full window slides by prefilling 3/4 of it again:
     * tens of ms for the default model, more for big ones.  Inside a
     * continuation's first events that would delay notes that are due soon,
     * so slide now, while the player plays, when fewer than context/8
     * events of room are left (a continuation's first context/8 events are
     * then slide-free).  Stream memory never slides: a full cache rolls. */
    if (e->st.memory == MODEL_MEMORY_WINDOW && e->st.m->cfg.context - e->st.n < e->st.m->cfg.context / 8
        && model_slide(&e->st) < 0)
        return -1;
    return 0;
}

static int me_begin(void *state, double at, const sampling *s)
{
    model_engine *e = state;
    if (e->have_smp) {          /* allocated once, re-seeded per continuation */
        if (sampler_configure(&e->smp, &s->set, s->seed) < 0)
            return -1;
    } else {
        e->have_smp = sampler_init(&e->smp, e->m.cfg.vocab_size, &s->set, s->seed) == 0;
        if (!e->have_smp)
            return -1;
    }
    /* the answer keeps the pace and key of what was heard (not in a duet,
     * where the player's part is heard while the model plays) */
    e->ctx.pos.follow.pace = s->report_time ? 0.0f : (float)s->set.pace;
    e->ctx.pos.follow.key_pull = s->report_time ? 0.0f : (float)s->set.key_pull;
    if (context_begin(&e->ctx, at) < 0)
        return -1;
    e->report_time = s->report_time;
    memset(e->model_on, 0, sizeof e->model_on);
    memset(e->cut, 0, sizeof e->cut);
    e->n_cut = 0;
    return 0;
}

/* What may come next: the codec's rule (what the decoder would discard,
 * time shifts protected), and no end before the first note (an empty
 * answer helps nobody).  The continuation starts now, with a note: no
 * leading silence, and at the dynamic in force (a VELOCITY first would
 * cost one more model step before the first note sounds). */
static void fill_mask(model_engine *e)
{
    const vocab *v = e->v;
    const context *c = &e->ctx;
    /* max_held_notes counts the model's notes: in a duet the player's
     * sounding notes are in the decoder too, and leave the cap alone. */
    int others = 0;
    for (int p = 0; p < 128; p++)
        others += c->pos.dec.onset[p] >= 0 && !e->model_on[p];
    perf_decoder_next_mask(&c->pos.dec, e->max_held + others, c->first_step >= 0, !e->smp.set.filter_time,
                           sampler_mask(&e->smp), e->smp.vocab_size);
    if (c->first_step >= 0)
        return;
    for (int s = 1; s <= v->n_time_shifts; s++)
        sampler_forbid(&e->smp, vocab_id(v, EVENT_TIME_SHIFT, s));
    if (c->pos.emit.bin >= 0)
        for (int b = 0; b < v->n_velocity_bins; b++)
            sampler_forbid(&e->smp, vocab_id(v, EVENT_VELOCITY, b));
}

/* Seconds from the continuation's first note to the current position. */
static double continuation_time(const model_engine *e)
{
    return (double)(e->ctx.pos.emit.step - e->ctx.first_step) * e->v->step_ms / 1000.0;
}

static int me_next(void *state, gen_event *out)
{
    model_engine *e = state;
    const vocab *v = e->v;
    context *c = &e->ctx;
    if (flush_pending(e) < 0)
        return -1;
    for (int p = 0; e->n_cut > 0 && p < 128; p++)
        if (e->cut[p]) {        /* a note of the model the player ended (a duet) */
            e->cut[p] = 0;
            e->n_cut--;
            *out = (gen_event){ continuation_time(e), 0, (uint8_t)p, 0 };
            return 1;
        }
    for (int guard = 0; guard < 4096; guard++) {
        fill_mask(e);
        perf_follow_apply(&c->pos.follow, v, context_time(c), e->st.logits);
        int id = sampler_sample(&e->smp, e->st.logits);
        int value;
        event_type t = vocab_decode(v, id, &value);
        if (t == EVENT_EOS)
            return 0;
        int ours = t == EVENT_NOTE_ON || (t == EVENT_NOTE_OFF && e->model_on[value]);
        if (!ours) {        /* time, velocity, or a note of the player: not ours to end */
            if (context_feed(c, id) < 0)
                return -1;
            if (t == EVENT_TIME_SHIFT && e->report_time && c->first_step >= 0) {
                *out = (gen_event){ continuation_time(e), 2, 0, 0 };
                return 1;   /* the caller paces the model against the music */
            }
            continue;
        }
        e->pending = id;    /* decoded at the next call: the event goes out first */
        if (c->first_step < 0)
            context_first_note(c);
        e->model_on[value] = t == EVENT_NOTE_ON;
        int bin = c->pos.emit.bin < 0 ? 15 : c->pos.emit.bin;
        int vel = t == EVENT_NOTE_ON ? bin_to_velocity(v, bin) : 0;
        if (vel < 1 && t == EVENT_NOTE_ON)
            vel = 64;
        *out = (gen_event){ continuation_time(e), t == EVENT_NOTE_ON, (uint8_t)value, (uint8_t)vel };
        return 1;
    }
    return 0;
}

/* Duet: the player's events up to session time T enter the context. */
static int me_hear_until(void *state, double t)
{
    model_engine *e = state;
    if (flush_pending(e) < 0)
        return -1;
    return hear(e, NULL, t);
}

static void me_end(void *state, double played)
{
    model_engine *e = state;
    (void)played;
    context_end(&e->ctx);
    if (flush_pending(e) < 0)
        return;
    /* Notes the continuation left sounding end in the context too, as they
     * do on the outputs. */
    for (int p = 0; p < 128; p++)
        if (e->model_on[p] && e->ctx.pos.dec.onset[p] >= 0) {
            if (context_feed(&e->ctx, vocab_id(e->v, EVENT_NOTE_OFF, p)) < 0)
                return;
            e->model_on[p] = 0;
        }
}

/* The context is rebuilt from the phrase end's last events by one prefill
 * (in stream memory a fresh window: the rolled states are gone). */
static void me_rewind(void *state)
{
    model_engine *e = state;
    e->pending = -1;
    context_rewind(&e->ctx);
    model_state_reset(&e->st);
    int n = e->ctx.pos.n_hist;
    if (n > 0 && model_prefill(&e->st, e->ctx.hist, n, NULL) < 0)
        log_warn("re-roll: cannot rebuild the model's context");
}

static const engine_ops model_ops = {
    "music-transformer", me_open, me_close, me_listen, me_begin, me_next, me_end, me_rewind, me_hear_until,
    me_ms_per_event,
};
const engine_ops *const engine_model = &model_ops;
