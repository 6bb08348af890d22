/* engine_model.c: the Music Transformer engine: the service's side of play/continuation (the model loaded, warmed up, timed; the candidate answers thought over in the silence). */
#include <stdlib.h>
#include <string.h>

#include "codec/follow.h"
#include "codec/vocab.h"
#include "daemon/adapted.h"
#include "daemon/engine.h"
#include "model/model.h"
#include "play/candidates.h"
#include "play/continuation.h"
#include "play/turn.h"
#include "util/clock.h"
#include "util/log.h"

typedef struct model_engine {
    model        m;
    const vocab *v;
    continuation cont;          /* the context, the sampler, the rules */
    double       ms_per_event;  /* a decode step at open (warm_up) */
    candidates   cands;         /* the answers thought over in the silence */
    int          have_cands;    /* cands allocated (at the first prepare) */
    int          prepared;      /* cont has begun and cands run for prep */
    cont_spec    prep;
    turn_ear     ear;           /* the player's playing, for the phrase end's cues */
} model_engine;

/* One decode step pages the mapped weights in (38 MB for a 22 M model: 15
 * ms of page faults), so the first answer is not the late one; then
 * WARM_STEPS more measure what an event costs (for lookahead_ms = auto).
 * The cache is emptied again. */
#define WARM_STEPS 8
static int warm_up(model_engine *e)
{
    model_state *st = continuation_model_state(&e->cont);
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
    char adapted[ADAPTED_PATH_MAX];
    if (model_open(&e->m, adapted_model_for(cfg->model, adapted, sizeof adapted), &e->v) != 0) {
        free(e);
        return -1;
    }
    log_info("model: %s", e->m.file.path);
    turn_ear_reset(&e->ear);
    int n_ctx = cfg->context_events < e->m.cfg.context ? cfg->context_events : e->m.cfg.context;
    if (continuation_init(&e->cont, &e->m, e->v, n_ctx, cfg->model_threads, (model_memory)cfg->memory,
                          cfg->play.max_note_ms / 1000.0, 0) < 0) {
        model_free(&e->m);
        free(e);
        return -1;
    }
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
    if (e->have_cands)
        candidates_free(&e->cands);
    continuation_free(&e->cont);
    model_free(&e->m);
    free(e);
}

/* The candidates go: the continuation they branched from had begun, and
 * ends with nothing played (as if it had not begun).  0, or -1 (logged). */
static int drop(model_engine *e)
{
    if (!e->prepared)
        return 0;
    e->prepared = 0;
    log_debug("candidates: dropped after %ld steps", e->cands.steps);
    return continuation_end(&e->cont);
}

static int me_listen(void *state, const smf_event *msg)
{
    model_engine *e = state;
    if (context_takes(msg) && drop(e) < 0)     /* the player plays on */
        return -1;
    turn_ear_hear(&e->ear, msg->time, msg->status, msg->data1, msg->data2);
    return continuation_hear(&e->cont, msg);
}

/* Room for N candidates: allocated once, again only for more. */
static int room_for(model_engine *e, int n)
{
    if (e->have_cands && e->cands.cap >= n)
        return 0;
    if (e->have_cands)
        candidates_free(&e->cands);
    e->have_cands = candidates_init(&e->cands, &e->cont, n) == 0;
    return e->have_cands ? 0 : -1;
}

/* The answer thought over in the silence: its candidates, or with
 * candidates = 1 the one answer, which a begin then only has to play. */
static int me_prepare(void *state, double at, const cont_spec *spec)
{
    model_engine *e = state;
    if (drop(e) < 0)
        return -1;
    if (spec->duet)
        return 0;
    int n = spec->play.candidates > 1 ? spec->play.candidates : 1;
    if (room_for(e, n) < 0 || continuation_begin(&e->cont, at, spec) < 0)
        return -1;
    if (candidates_start(&e->cands, n) < 0) {
        continuation_end(&e->cont);     /* the start's failure is the one to report */
        return -1;
    }
    e->prep = *spec;
    e->prepared = 1;
    return 0;
}

/* The odds after the last id heard, the release: the logits of what the
 * model expects the player to play next. */
static int me_odds(void *state, double at, turn_odds *out)
{
    model_engine *e = state;
    if (drop(e) < 0 || continuation_hear_until(&e->cont, at) < 0)
        return -1;
    turn_odds_read(out, e->v, continuation_model_state(&e->cont)->logits);
    double onset = perf_follow_last_onset(&e->cont.ctx.pos.follow);
    out->onset_age = onset >= 0 && at > onset ? at - onset : 0;
    turn_ear_cues(&e->ear, out);
    return 0;
}

static int me_think(void *state)
{
    model_engine *e = state;
    if (!e->prepared || candidates_judged(&e->cands))
        return 0;
    int rc = candidates_step(&e->cands);
    if (rc < 0) {
        drop(e);                /* the step's failure is the one to report */
        return -1;
    }
    return rc > 0;
}

static int me_ready(void *state)
{
    model_engine *e = state;
    return e->prepared && candidates_ahead(&e->cands, ENGINE_READY_S);
}

/* A begin may take the prepared candidates: the same settings, field by
 * field of the play table, and the same seed (the length may be another:
 * the answer is cut at its own). */
#define SAME_FIELD(key, cli, kind, field, def, lo, hi, arg, apply, help) \
    && memcmp(&a->play.field, &b->play.field, sizeof a->play.field) == 0
static int same_answer(const cont_spec *a, const cont_spec *b)
{
    return a->seed == b->seed && a->duet == b->duet && a->max_events == b->max_events PLAY_OPTIONS(SAME_FIELD);
}


static int me_hear_until(void *state, double t)
{
    return continuation_hear_until(&((model_engine *)state)->cont, t);
}

/* The prepared candidates stepped to their end, or for BUDGET seconds
 * (0: as they stand); the best becomes the continuation, cut at SPEC's
 * length.  0 or -1. */
static int play_best(model_engine *e, const cont_spec *spec, double budget)
{
    double t0 = clock_now_seconds();
    int n = e->cands.n;
    e->prepared = 0;
    int best = candidates_play(&e->cands, budget, LOG_LEVEL_DEBUG, spec->seconds);
    if (best < 0) {
        continuation_end(&e->cont);     /* the candidates' failure is the one to report */
        return -1;
    }
    log_debug("candidates: %d of %d played (best %s), %ld batched steps, %.1f ms at the answer", best, n,
              play_score_name(spec->play.candidate_score), e->cands.steps, (clock_now_seconds() - t0) * 1e3);
    return 0;
}

static int me_begin(void *state, double at, const cont_spec *spec)
{
    model_engine *e = state;
    /* Thought over in the silence: chosen among as they stand, so the
     * first note goes out at once however long the silence was (with a
     * silence too short for their first 10 s, `continue --candidates`
     * thinks further and may pick another) */
    if (e->prepared && same_answer(&e->prep, spec))
        return play_best(e, spec, 0);
    if (e->prepared)
        log_debug("candidates: the settings changed since they were prepared");
    if (drop(e) < 0)
        return -1;
    if (spec->play.candidates <= 1 || spec->duet)
        return continuation_begin(&e->cont, at, spec);
    /* not thought over in a silence (`ctl play`, a re-roll): now, to the end */
    if (me_prepare(e, at, spec) < 0)
        return -1;
    return play_best(e, spec, 1e9);
}

static int me_next(void *state, cont_event *out)
{
    return continuation_next(&((model_engine *)state)->cont, out);
}

/* The engine's end and rewind cannot fail: a failure is logged where it
 * happens, and the next begin or hear meets the model state as it is. */
static void me_end(void *state, double played)
{
    (void)played;
    continuation_end(&((model_engine *)state)->cont);
}

static void me_rewind(void *state)
{
    drop(state);
    continuation_rewind(&((model_engine *)state)->cont);
}

static int me_keep_played(void *state, double played)
{
    model_engine *e = state;
    if (drop(e) < 0)
        return -1;
    return continuation_keep_played(&e->cont, played);
}

static int me_replay(void *state, double at, const cont_event *ev, int n)
{
    if (drop(state) < 0)
        return -1;
    return continuation_replay(&((model_engine *)state)->cont, at, ev, n);
}

static void me_watch(void *state, int on)
{
    continuation_watch(&((model_engine *)state)->cont, on);
}

static int me_attention(void *state, uint32_t note, note_attention *out)
{
    const note_attention *a = continuation_note_attention(&((model_engine *)state)->cont, note);
    if (a)
        *out = *a;
    return a != NULL;
}

/* Takes FROM's place: its candidates go (their continuation ends), its
 * context moves over (continuation_take_over), and what it heard of the
 * player (the ear). */
static int me_take_over(void *state, void *from)
{
    model_engine *e = state, *old = from;
    if (drop(old) < 0)
        return -1;
    e->ear = old->ear;
    return continuation_take_over(&e->cont, &old->cont);
}

static const char *me_file(void *state)
{
    return ((model_engine *)state)->m.file.path;
}

static const engine_ops model_ops = {
    .name = "music-transformer",
    .open = me_open,
    .close = me_close,
    .listen = me_listen,
    .begin = me_begin,
    .next = me_next,
    .end = me_end,
    .rewind = me_rewind,
    .keep_played = me_keep_played,
    .hear_until = me_hear_until,
    .ms_per_event = me_ms_per_event,
    .replay = me_replay,
    .prepare = me_prepare,
    .think = me_think,
    .ready = me_ready,
    .odds = me_odds,
    .watch = me_watch,
    .attention = me_attention,
    .take_over = me_take_over,
    .file = me_file,
};
const engine_ops *const engine_model = &model_ops;
