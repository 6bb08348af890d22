/* test_keep.c: an answer stopped part way (the player plays on) leaves in the context only what sounded of it, its notes sounding then ended, and the player's next notes placed after that moment, on a tiny random model (no shipped model file). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/model.h"
#include "play/continuation.h"
#include "play/play_options.h"

#define N_HIST   512        /* the service's context of ids (the model's own is 8: it rolls) */
#define MAX_EV   4096
#define SECONDS  6.0

static model        m;
static const vocab *v;

/* A phrase of six notes, a quarter of a second apart, heard; then a
 * continuation with SEED begun at its end (session time 1.45 s). */
static int begun(continuation *c, uint64_t seed)
{
    static const uint8_t notes[6] = { 60, 64, 67, 72, 67, 64 };
    cont_spec spec = { .seed = seed, .seconds = SECONDS, .max_events = INT32_MAX };
    play_default(&spec.play);
    if (continuation_init(c, &m, v, N_HIST, 1, MODEL_MEMORY_STREAM, spec.play.max_note_ms / 1000.0, 0) != 0)
        return -1;
    for (int i = 0; i < 6; i++) {
        smf_event on = { .time = 0.25 * i, .status = 0x90, .data1 = notes[i], .data2 = 70 };
        smf_event off = { .time = 0.25 * i + 0.2, .status = 0x80, .data1 = notes[i] };
        if (continuation_hear(c, &on) != 0 || continuation_hear(c, &off) != 0)
            return -1;
    }
    return continuation_begin(c, 1.45, &spec);
}

/* The events C hands out into EV, to its end or to the first later than
 * UNTIL; their count. */
static int play_out(continuation *c, cont_event *ev, double until)
{
    int n = 0;
    while (n < MAX_EV && (n == 0 || ev[n - 1].time <= until) && continuation_next(c, &ev[n]) > 0)
        n++;
    return n;
}

/* The note-ons that the context holds after its mark, with their times
 * from the continuation's first note (in steps); whether a NOTE_ON or a
 * TIME_SHIFT stands after a NOTE_OFF that follows the last TIME_SHIFT
 * (the ending note-offs come last). */
static int context_notes(const context *x, int *pitch, int64_t *at)
{
    int n = 0;
    int64_t step = x->mark.emit.step;
    for (int k = x->mark.n_hist; k < x->pos.n_hist; k++) {
        int value;
        event_type t = vocab_decode(v, x->hist[k], &value);
        if (t == EVENT_TIME_SHIFT)
            step += value;
        else if (t == EVENT_NOTE_ON) {
            pitch[n] = value;
            at[n++] = step - x->first_step;
        }
    }
    return n;
}

/* Stopped at PLAYED seconds (after its end when ENDED, else during it):
 * the context holds the note-ons played up to PLAYED and no later one,
 * nothing sounds in it, the model's cache is the prefill of its ids, and
 * the player's note 0.5 s later comes 0.5 s after that moment. */
static void check_stop(uint64_t seed, double played, int ended, int *hist_out, int *n_out)
{
    static cont_event ev[MAX_EV];
    continuation c;
    CHECK(begun(&c, seed) == 0);
    int n = play_out(&c, ev, ended ? INFINITY : played + 0.5);
    fprintf(stderr, "seed %llu: %d events to %.3f s, stopped at %.3f s%s\n", (unsigned long long)seed, n,
            n ? ev[n - 1].time : 0.0, played, ended ? ", after its end" : "");
    CHECK(n >= 3 && ev[n - 1].time > played + 0.5);
    if (ended)
        CHECK(continuation_end(&c) == 0);
    double first = (double)c.ctx.first_step * v->step_ms / 1000.0;    /* session time of its first note */
    int from = c.ctx.mark.n_hist, cut = from + context_played_ids(&c.ctx, played);
    CHECK(context_time(&c.ctx) > first + played);
    CHECK(continuation_keep_played(&c, played) == 0);
    if (!ended)
        CHECK(continuation_end(&c) == 0);
    CHECK(context_time(&c.ctx) <= first + played + 1e-9);   /* taken back to the stop */
    CHECK_INT(c.ctx.mark.n_hist, from);

    int pitch[MAX_EV], want = 0;
    int64_t at[MAX_EV];
    int got = context_notes(&c.ctx, pitch, at);
    for (int i = 0; i < n; i++) {
        if (ev[i].kind != CONT_NOTE_ON || ev[i].time > played + 1e-9)
            continue;
        CHECK(want < got && pitch[want] == ev[i].pitch && at[want] == llround(ev[i].time * 1000 / v->step_ms));
        want++;
    }
    CHECK_INT(got, want);
    CHECK(want >= 1);
    for (int p = 0; p < 128; p++)
        CHECK(!c.ctx.open[p]);              /* nothing left sounding */

    /* the cache: the context's ids up to the stop prefilled afresh (as
     * many as the model holds), then the note-offs that end its notes */
    model_state fresh;
    int keep = cut < m.cfg.context ? cut : m.cfg.context;
    CHECK(model_state_init(&fresh, &m, 1) == 0);
    model_state_set_memory(&fresh, MODEL_MEMORY_STREAM);
    CHECK(model_prefill(&fresh, c.ctx.hist + cut - keep, keep, NULL) == 0);
    for (int k = cut; k < c.ctx.pos.n_hist; k++)
        CHECK(model_decode(&fresh, c.ctx.hist[k]) != NULL);
    CHECK(memcmp(fresh.logits, c.own.st.logits, sizeof(float) * (size_t)m.cfg.vocab_size) == 0);
    model_state_free(&fresh);

    memcpy(hist_out, c.ctx.hist, sizeof(int) * (size_t)c.ctx.pos.n_hist);
    *n_out = c.ctx.pos.n_hist;

    /* the player's note half a second after the stop: that far after it */
    smf_event on = { .time = first + played + 0.5, .status = 0x90, .data1 = 50, .data2 = 60 };
    CHECK(continuation_hear(&c, &on) == 0 && continuation_hear_until(&c, on.time + 0.1) == 0);
    CHECK(fabs(context_time(&c.ctx) - (first + played + 0.5)) < 0.011);
    /* the player came in: the ids after the mark are not the answer's alone */
    int now = c.ctx.pos.n_hist;
    CHECK(continuation_keep_played(&c, 0.1) == 0);
    CHECK_INT(c.ctx.pos.n_hist, now);
    continuation_free(&c);
}

/* Stopped after all of it sounded: nothing changes. */
static void check_all_played(uint64_t seed)
{
    static cont_event ev[MAX_EV];
    continuation c;
    CHECK(begun(&c, seed) == 0);
    int n = play_out(&c, ev, INFINITY);
    CHECK(continuation_end(&c) == 0);
    int before = c.ctx.pos.n_hist;
    int *copy = malloc(sizeof(int) * (size_t)before);
    memcpy(copy, c.ctx.hist, sizeof(int) * (size_t)before);
    CHECK(continuation_keep_played(&c, ev[n - 1].time + 1.0) == 0);
    CHECK_INT(c.ctx.pos.n_hist, before);
    CHECK(memcmp(copy, c.ctx.hist, sizeof(int) * (size_t)before) == 0);
    free(copy);
    continuation_free(&c);
}

int main(int argc, char **argv)
{
    static int h1[N_HIST], h2[N_HIST];
    int n1 = 0, n2 = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: test_keep TINY_MODEL.gguf\n");
        return 2;
    }
    if (model_open(&m, argv[1], &v) != 0)
        return 1;
    check_stop(11, 0.805, 1, h1, &n1);      /* after the answer was all sampled (candidates) */
    check_stop(11, 0.805, 0, h2, &n2);      /* while it was being sampled (one candidate) */
    CHECK(n1 == n2 && memcmp(h1, h2, sizeof(int) * (size_t)n1) == 0);
    check_stop(23, 2.5, 1, h1, &n1);
    check_all_played(11);
    model_free(&m);
    return CHECK_DONE();
}
