/* context.c: the model's context as one token stream: the player's MIDI through the codec's streaming encoder, the model's samples through its streaming decoder. */
#include "play/context.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

int context_init(context *c, const vocab *v, int n_ctx, double max_note_s, context_feed_fn feed, void *user)
{
    memset(c, 0, sizeof *c);
    c->v = v;
    c->feed = feed;
    c->user = user;
    c->n_ctx = n_ctx;
    c->hist = calloc((size_t)n_ctx, sizeof *c->hist);
    c->tag = calloc((size_t)n_ctx, sizeof *c->tag);
    c->enc = perf_encoder_new_events(v, NULL);
    if (!c->hist || !c->tag || !c->enc) {
        log_error("cannot start the model's context: out of memory");
        context_free(c);
        return -1;
    }
    c->pos.emit.bin = -1;
    perf_decoder_init(&c->pos.dec, v, max_note_s);
    perf_follow_init(&c->pos.follow, 0, 0);
    c->mark = c->pos;
    memcpy(c->mark_open, c->open, sizeof c->open);
    c->first_step = -1;
    c->origin = -1;
    c->mark_stale = 1;
    return 0;
}

double context_time(const context *c)
{
    return (double)c->pos.emit.step * c->v->step_ms / 1000.0;
}

void context_free(context *c)
{
    perf_encoder_free(c->enc);
    free(c->hist);
    free(c->tag);
    note_list_free(&c->done);
    memset(c, 0, sizeof *c);
}

void context_copy(context *dst, const context *src)
{
    memcpy(dst->hist, src->hist, sizeof *dst->hist * (size_t)src->pos.n_hist);
    memcpy(dst->tag, src->tag, sizeof *dst->tag * (size_t)src->pos.n_hist);
    memcpy(dst->heard_tag, src->heard_tag, sizeof dst->heard_tag);
    dst->next_tag = src->next_tag;
    dst->pos = src->pos;
    dst->mark = src->mark;
    memcpy(dst->open, src->open, sizeof dst->open);
    memcpy(dst->mark_open, src->mark_open, sizeof dst->mark_open);
    dst->done.n = 0;
    dst->in_continuation = src->in_continuation;
    dst->mark_stale = src->mark_stale;
    dst->first_step = src->first_step;
    dst->begin_step = src->begin_step;
    dst->origin = src->origin;
}

void context_follow_memory(context *c, const player_memory *m)
{
    memory_follower_init(&c->pos.memory, m);
    for (int i = 0; i < c->pos.n_hist; i++) {
        if (i == c->mark.n_hist)
            c->mark.memory = c->pos.memory;
        memory_follower_feed(&c->pos.memory, c->hist[i]);
    }
    if (c->mark.n_hist >= c->pos.n_hist)
        c->mark.memory = c->pos.memory;
}

int context_feed(context *c, int id)
{
    if (c->feed && c->feed(c->user, id) < 0)
        return -1;
    c->done.n = 0;
    if (perf_decoder_push(&c->pos.dec, id, &c->done) < 0)
        return -1;
    if (c->pos.n_hist == c->n_ctx) {
        memmove(c->hist, c->hist + 1, (size_t)(c->n_ctx - 1) * sizeof *c->hist);
        memmove(c->tag, c->tag + 1, (size_t)(c->n_ctx - 1) * sizeof *c->tag);
        c->pos.n_hist--;
        if (c->mark.n_hist > 0)
            c->mark.n_hist--;
        else
            c->mark_stale = 1;
    }
    int value;
    event_type t = vocab_decode(c->v, id, &value);
    c->tag[c->pos.n_hist] = t == EVENT_NOTE_ON ? c->next_tag : 0;
    c->next_tag = t == EVENT_NOTE_ON ? 0 : c->next_tag;
    c->hist[c->pos.n_hist++] = id;
    perf_follow_push(&c->pos.follow, c->v, id, context_time(c));
    memory_follower_feed(&c->pos.memory, id);
    if (t == EVENT_TIME_SHIFT)
        c->pos.emit.step += value;
    else if (t == EVENT_VELOCITY)
        c->pos.emit.bin = value;
    else if (t == EVENT_NOTE_ON || t == EVENT_NOTE_OFF)
        c->open[value] = t == EVENT_NOTE_ON;
    return 0;
}

/* One event of the player's, final, into the stream: its step on the
 * context's time line, the silence before it capped, tokenized by the
 * codec (perf_emit). */
static int hear_event(context *c, const perf_event *ev)
{
    const vocab *v = c->v;
    if (c->origin < 0)
        c->origin = ev->step;
    int64_t step = ev->step - c->origin;
    if (c->in_continuation && c->first_step >= 0)  /* a duet: on the continuation's time line */
        step = c->first_step + (step - c->begin_step);
    if (!ev->on && !c->open[ev->pitch])
        return 0;   /* the model ended it already (a sampled NOTE_OFF of the player's pitch) */
    int64_t gap = step - c->pos.emit.step, max_gap = (int64_t)(CONTEXT_MAX_GAP_S * 1000 / v->step_ms);
    if (c->pos.n_hist == 0 || gap < 0)
        gap = 0;
    perf_event at = *ev;
    at.step = c->pos.emit.step + (gap > max_gap ? max_gap : gap);
    perf_emit_pos pos = c->pos.emit;
    uint16_t ids[8];
    c->next_tag = ev->on ? c->heard_tag[ev->pitch & 0x7F] : 0;
    if (perf_emit_room(v, &pos, at.step) > sizeof ids / sizeof ids[0])
        return -1;  /* cannot happen: the gap is capped at 2 s */
    size_t n = perf_emit(v, &pos, &at, ids);
    c->mark_stale |= n > 0;
    for (size_t i = 0; i < n; i++)
        if (context_feed(c, ids[i]) < 0)
            return -1;
    if (!c->in_continuation || step > c->pos.emit.step)
        c->pos.emit.step = step;    /* the context's clock follows the player's (in a duet,
                                       never back: the model's events keep their order) */
    return 0;
}

/* What the encoder made final enters the stream. */
static int hear_final(context *c)
{
    perf_event ev[64];
    size_t n;
    while ((n = perf_encoder_pop_events(c->enc, ev, sizeof ev / sizeof ev[0])) > 0)
        for (size_t i = 0; i < n; i++)
            if (hear_event(c, &ev[i]) < 0)
                return -1;
    return 0;
}

int context_takes(const smf_event *msg)
{
    int type = msg->status & 0xF0;
    return type == 0x80 || type == 0x90 || (type == 0xB0 && msg->data1 == 64);
}

int context_hear(context *c, const smf_event *msg)
{
    if (!context_takes(msg))
        return 0;
    if ((msg->status & 0xF0) == 0x90 && msg->data2 > 0)
        c->heard_tag[msg->data1 & 0x7F] = msg->tick;
    if (perf_encoder_push(c->enc, msg) < 0)
        return -1;
    return hear_final(c);
}

int context_hear_until(context *c, double t)
{
    if (perf_encoder_advance(c->enc, t) < 0)
        return -1;
    return hear_final(c);
}

int context_begin(context *c, double at)
{
    const vocab *v = c->v;
    /* one step on: the events of AT's own step are final too */
    if (context_hear_until(c, at + v->step_ms / 1000.0) < 0)
        return -1;
    if (c->pos.n_hist == 0 && context_feed(c, vocab_id(v, EVENT_VELOCITY, velocity_to_bin(v, 64))) < 0)
        return -1;  /* nothing heard yet: start from a mid velocity */
    perf_follow_aim(&c->pos.follow, context_time(c));  /* the pace and key heard up to now */
    c->mark = c->pos;
    memcpy(c->mark_open, c->open, sizeof c->open);
    c->first_step = -1;
    c->in_continuation = 1;
    c->mark_stale = 0;
    if (c->origin < 0)
        c->origin = perf_quantize(v, 1.0, at);
    c->begin_step = perf_quantize(v, 1.0, at) - c->origin;
    return 0;
}

void context_first_note(context *c)
{
    c->first_step = c->pos.emit.step;
}

void context_end(context *c)
{
    c->in_continuation = 0;
}

void context_rewind(context *c)
{
    c->pos = c->mark;
    memcpy(c->open, c->mark_open, sizeof c->open);
}

int context_played_ids(const context *c, double played)
{
    if (c->mark_stale)
        return -1;
    if (c->first_step < 0)
        return 0;                   /* no note yet: nothing sounded */
    int64_t step = c->mark.emit.step, last = c->first_step + (int64_t)floor(played * 1000.0 / c->v->step_ms + 1e-9);
    int k = c->mark.n_hist;
    for (; k < c->pos.n_hist; k++) {
        int value;
        if (vocab_decode(c->v, c->hist[k], &value) == EVENT_TIME_SHIFT)
            step += value;
        if (step > last)
            break;
    }
    return k - c->mark.n_hist;
}
