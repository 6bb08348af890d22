/* engine_model.c: the Music Transformer engine: the service's side of play/continuation (the model loaded, warmed up, timed). */
#include <stdlib.h>
#include <string.h>

#include "codec/vocab.h"
#include "daemon/engine.h"
#include "model/model.h"
#include "play/continuation.h"
#include "util/clock.h"
#include "util/log.h"

typedef struct model_engine {
    model        m;
    const vocab *v;
    continuation cont;          /* the context, the sampler, the rules */
    double       ms_per_event;  /* a decode step at open (warm_up) */
} model_engine;

/* One decode step pages the mapped weights in (38 MB for a 22 M model: 15
 * ms of page faults), so the first answer is not the late one; then
 * WARM_STEPS more measure what an event costs (for lookahead_ms = auto).
 * The cache is emptied again. */
#define WARM_STEPS 8
static int warm_up(model_engine *e)
{
    model_state *st = &e->cont.st;
    int id = vocab_id(e->v, EVENT_VELOCITY, 0);
    if (!model_decode(st, id))
        return -1;
    double t0 = clock_now_seconds();
    for (int i = 0; i < WARM_STEPS; i++)
        if (!model_decode(st, id))
            return -1;
    e->ms_per_event = (clock_now_seconds() - t0) * 1000.0 / WARM_STEPS;
    model_state_reset(st);
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
    int n_ctx = cfg->context_events < e->m.cfg.context ? cfg->context_events : e->m.cfg.context;
    if (continuation_init(&e->cont, &e->m, e->v, n_ctx, cfg->model_threads, (model_memory)cfg->memory, 0) < 0) {
        model_free(&e->m);
        free(e);
        return -1;
    }
    e->cont.ctx.pos.dec.max_note_s = cfg->play.max_note_ms / 1000.0;
    if (warm_up(e) < 0) {
        continuation_free(&e->cont);
        model_free(&e->m);
        free(e);
        return -1;
    }
    *state = e;
    return 0;
}

static void me_close(void *state)
{
    model_engine *e = state;
    continuation_free(&e->cont);
    model_free(&e->m);
    free(e);
}

static int me_listen(void *state, const smf_event *msg)
{
    return continuation_hear(&((model_engine *)state)->cont, msg);
}

static int me_hear_until(void *state, double t)
{
    return continuation_hear_until(&((model_engine *)state)->cont, t);
}

static int me_begin(void *state, double at, const cont_spec *spec)
{
    return continuation_begin(&((model_engine *)state)->cont, at, spec);
}

static int me_next(void *state, cont_event *out)
{
    return continuation_next(&((model_engine *)state)->cont, out);
}

static void me_end(void *state, double played)
{
    (void)played;
    continuation_end(&((model_engine *)state)->cont);
}

static void me_rewind(void *state)
{
    continuation_rewind(&((model_engine *)state)->cont);
}

static int me_replay(void *state, double at, const cont_event *ev, int n)
{
    return continuation_replay(&((model_engine *)state)->cont, at, ev, n);
}

static const engine_ops model_ops = {
    "music-transformer", me_open, me_close, me_listen, me_begin, me_next, me_end, me_rewind, me_hear_until,
    me_ms_per_event, me_replay,
};
const engine_ops *const engine_model = &model_ops;
