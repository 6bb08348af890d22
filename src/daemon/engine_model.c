/* engine_model.c: the Music Transformer engine: player's events into the KV cache, sampled continuations out. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/perf.h"
#include "codec/vocab.h"
#include "daemon/engine.h"
#include "model/model.h"
#include "model/sampler.h"
#include "util/log.h"

/* The codec fills the sampler's mask (perf_decoder_next_mask): same values. */
_Static_assert((int)PERF_NEXT_FORBIDDEN == (int)SAMPLER_FORBIDDEN && (int)PERF_NEXT_PROTECTED == (int)SAMPLER_PROTECTED,
               "the codec's mask values are the sampler's");

#define MAX_GAP_S 2.0       /* a longer silence of the player enters the context as 2 s */

/* Where the token stream stands: saved at a continuation's start so a
 * re-roll can go back to it. */
typedef struct stream_pos {
    int64_t      step;          /* time of the last token, in steps */
    int          vel_bin;       /* velocity bin in force (-1: none yet) */
    perf_decoder dec;           /* what sounds, for the sampler's mask */
    int          n_hist;        /* tokens in hist */
} stream_pos;

typedef struct model_engine {
    model        m;
    model_state  st;
    sampler      smp;
    int          have_smp;
    const vocab *v;
    note_list    done;          /* scratch for the decoder's completed notes */
    int         *hist;          /* (context) the context's tokens, oldest first */
    int          n_ctx;
    stream_pos   pos, mark;     /* now; at the last continuation's start */
    int          max_held;
    /* the continuation being sampled */
    int64_t      first_step;    /* step of its first note event, -1 before */
    int          in_continuation;   /* between begin and end */
    double       begin_at;      /* session time of the continuation's time 0 */
    int          pending;       /* a sampled note event handed out before it was
                                   decoded (so it sounds one model step
                                   sooner); fed at the next call; -1: none */
    uint8_t      model_on[128]; /* pitches the continuation started and did not end */
    int          report_time;   /* next returns TIME_SHIFTs too (a duet) */
} model_engine;

/* One token into the context (KV cache) and the stream state. */
static int feed(model_engine *e, int id)
{
    if (!model_decode(&e->st, id))
        return -1;
    e->done.n = 0;
    if (perf_decoder_push(&e->pos.dec, id, &e->done) < 0)
        return -1;
    if (e->pos.n_hist == e->n_ctx) {
        memmove(e->hist, e->hist + 1, (size_t)(e->n_ctx - 1) * sizeof *e->hist);
        e->pos.n_hist--;
        if (e->mark.n_hist > 0)
            e->mark.n_hist--;
    }
    e->hist[e->pos.n_hist++] = id;
    int value;
    event_type t = vocab_decode(e->v, id, &value);
    if (t == EVENT_TIME_SHIFT)
        e->pos.step += value;
    else if (t == EVENT_VELOCITY)
        e->pos.vel_bin = value;
    return 0;
}

static int feed_time(model_engine *e, int64_t steps)
{
    while (steps > 0) {
        int s = steps > e->v->n_time_shifts ? e->v->n_time_shifts : (int)steps;
        if (feed(e, vocab_id(e->v, EVENT_TIME_SHIFT, s)) < 0)
            return -1;
        steps -= s;
    }
    return 0;
}

/* Feeds the note event handed out last, if any. */
static int flush_pending(model_engine *e)
{
    int id = e->pending;
    e->pending = -1;
    return id >= 0 ? feed(e, id) : 0;
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
    e->n_ctx = cfg->context_events < e->m.cfg.context ? cfg->context_events : e->m.cfg.context;
    e->hist = calloc((size_t)e->n_ctx, sizeof *e->hist);
    if (!e->hist) {
        log_error("cannot start the model engine: out of memory");
        model_state_free(&e->st);
        goto fail;
    }
    e->max_held = cfg->max_held_notes;
    e->pos.vel_bin = -1;
    perf_decoder_init(&e->pos.dec, e->v, cfg->max_note_ms / 1000.0);
    e->first_step = -1;
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
    note_list_free(&e->done);
    free(e->hist);
    model_state_free(&e->st);
    model_free(&e->m);
    free(e);
}

static int listen_event(model_engine *e, const gen_event *ev)
{
    const vocab *v = e->v;
    if (flush_pending(e) < 0)
        return -1;
    if (ev->pitch < v->min_pitch || ev->pitch > v->max_pitch)
        return 0;
    int64_t step = llround(ev->time * 1000.0 / v->step_ms);
    if (e->in_continuation && e->first_step >= 0)   /* a duet: on the continuation's time line */
        step = e->first_step + llround((ev->time - e->begin_at) * 1000.0 / v->step_ms);
    int64_t gap = step - e->pos.step, max_gap = (int64_t)(MAX_GAP_S * 1000 / v->step_ms);
    if (e->pos.n_hist == 0 || gap < 0)
        gap = 0;
    if (feed_time(e, gap > max_gap ? max_gap : gap) < 0)
        return -1;
    if (!e->in_continuation || step > e->pos.step)
        e->pos.step = step; /* the context's clock follows the player's (in a duet,
                               never back: the model's events keep their order) */
    if (ev->on) {
        int bin = velocity_to_bin(v, ev->velocity);
        if (bin != e->pos.vel_bin && feed(e, vocab_id(v, EVENT_VELOCITY, bin)) < 0)
            return -1;
        return feed(e, vocab_id(v, EVENT_NOTE_ON, ev->pitch));
    }
    if (e->pos.dec.onset[ev->pitch] < 0)
        return 0;
    return feed(e, vocab_id(v, EVENT_NOTE_OFF, ev->pitch));
}

static int me_listen(void *state, const gen_event *ev)
{
    model_engine *e = state;
    if (listen_event(e, ev) < 0)
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
    if (e->pos.n_hist == 0) {   /* nothing heard yet: start from a mid velocity */
        int bin = velocity_to_bin(e->v, 64);
        if (feed(e, vocab_id(e->v, EVENT_VELOCITY, bin)) < 0)
            return -1;
    }
    e->mark = e->pos;
    e->first_step = -1;
    e->in_continuation = 1;
    e->begin_at = at;
    e->report_time = s->report_time;
    memset(e->model_on, 0, sizeof e->model_on);
    return 0;
}

static int me_next(void *state, gen_event *out)
{
    model_engine *e = state;
    const vocab *v = e->v;
    if (flush_pending(e) < 0)
        return -1;
    for (int guard = 0; guard < 4096; guard++) {
        /* no end before the first note: an empty answer helps nobody */
        perf_decoder_next_mask(&e->pos.dec, e->max_held, e->first_step >= 0, !e->smp.set.filter_time,
                               sampler_mask(&e->smp), e->smp.vocab_size);
        if (e->first_step < 0) {
            /* The continuation starts now, with a note: no leading silence,
             * and at the dynamic in force (a VELOCITY first would cost one
             * more model step before the first note sounds). */
            for (int s = 1; s <= v->n_time_shifts; s++)
                sampler_forbid(&e->smp, vocab_id(v, EVENT_TIME_SHIFT, s));
            if (e->pos.vel_bin >= 0)
                for (int b = 0; b < v->n_velocity_bins; b++)
                    sampler_forbid(&e->smp, vocab_id(v, EVENT_VELOCITY, b));
        }
        int id = sampler_sample(&e->smp, e->st.logits);
        int value;
        event_type t = vocab_decode(v, id, &value);
        if (t == EVENT_EOS)
            return 0;
        int ours = t == EVENT_NOTE_ON || (t == EVENT_NOTE_OFF && e->model_on[value]);
        if (!ours) {        /* time, velocity, or a note of the player: not ours to end */
            if (feed(e, id) < 0)
                return -1;
            if (t == EVENT_TIME_SHIFT && e->report_time && e->first_step >= 0) {
                out->time = (double)(e->pos.step - e->first_step) * v->step_ms / 1000.0;
                out->on = 2;
                out->pitch = out->velocity = 0;
                return 1;   /* the caller paces the model against the music */
            }
            continue;
        }
        e->pending = id;    /* decoded at the next call: the event goes out first */
        if (e->first_step < 0)
            e->first_step = e->pos.step;
        e->model_on[value] = t == EVENT_NOTE_ON;
        out->time = (double)(e->pos.step - e->first_step) * v->step_ms / 1000.0;
        out->on = t == EVENT_NOTE_ON;
        out->pitch = (uint8_t)value;
        out->velocity = (uint8_t)(t == EVENT_NOTE_ON ? bin_to_velocity(v, e->pos.vel_bin < 0 ? 15 : e->pos.vel_bin) : 0);
        if (out->velocity < 1 && out->on)
            out->velocity = 64;
        return 1;
    }
    return 0;
}

static void me_end(void *state, double played)
{
    model_engine *e = state;
    (void)played;
    e->in_continuation = 0;
    if (flush_pending(e) < 0)
        return;
    /* Notes the continuation left sounding end in the context too, as they
     * do on the outputs. */
    for (int p = 0; p < 128; p++)
        if (e->model_on[p] && e->pos.dec.onset[p] >= 0) {
            if (feed(e, vocab_id(e->v, EVENT_NOTE_OFF, p)) < 0)
                return;
            e->model_on[p] = 0;
        }
}

/* The context is rebuilt from the phrase end's last events by one prefill
 * (in stream memory a fresh window: the rolled states are gone). */
static void me_rewind(void *state)
{
    model_engine *e = state;
    int n = e->mark.n_hist;
    e->pending = -1;
    e->pos = e->mark;
    model_state_reset(&e->st);
    if (n > 0 && model_prefill(&e->st, e->hist, n, NULL) < 0)
        log_warn("re-roll: cannot rebuild the model's context");
}

static const engine_ops model_ops = {
    "music-transformer", me_open, me_close, me_listen, me_begin, me_next, me_end, me_rewind,
};
const engine_ops *const engine_model = &model_ops;
