/* generator.c: the generator thread, its command/output rings and wake-ups. */
#include "daemon/generator.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

#define GEN_RING 16384      /* > the longest continuation (8192 events) + its end */
#define GEN_HEADS_RING 256  /* note-ons' sources the loop has not taken yet */
#define GEN_STALL_MIN_NS 5000000000LL   /* the shortest stall threshold: 5 s */

static void ring_fd(int fd)
{
    uint64_t one = 1;
    ssize_t r = write(fd, &one, sizeof one);
    (void)r;   /* EAGAIN: the counter is already non-zero, so it is awake */
}

static void drain_fd(int fd)
{
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof v);
    (void)r;
}

/* Waits for the next command, or until DEADLINE (ns, CLOCK_MONOTONIC). */
static void wait_cmd_until(generator *g, int64_t deadline)
{
    int64_t left = deadline - clock_now_ns();
    if (left <= 0)
        return;
    struct pollfd pfd = { g->wake_gen, POLLIN, 0 };
    if (poll(&pfd, 1, (int)((left + 999999) / 1000000)) > 0)
        drain_fd(g->wake_gen);
}

static void push_out(generator *g, const gen_out *o)
{
    if (ring_push(&g->outs, o) < 0)
        log_warn_limited(&g->drop_warn, "generator: output ring full, event dropped");
    ring_fd(g->wake_loop);
}

/* The engine watches while the loop has watchers. */
static void sync_watch(generator *g)
{
    int on = atomic_load(&g->watchers) > 0;
    if (on != g->watching && g->engine->watch) {
        g->engine->watch(g->state, on);
        g->watching = on;
    }
}

/* A model note-on handed out: its sources to the watchers, if kept. */
static void send_heads(generator *g, const cont_event *ev)
{
    note_attention a;
    if (!g->watching || ev->kind != CONT_NOTE_ON || !g->engine->attention(g->state, ev->note, &a))
        return;
    if (ring_push(&g->heads, &a) < 0)
        atomic_fetch_add(&g->heads_dropped, 1);
}

/* What the thread keeps between passes: the continuation it generates. */
typedef struct gen_run {
    uint32_t cur;               /* continuation being generated */
    int      generating;
    int      duet;              /* the continuation is a duet (see gen_cmd) */
    double   at;                /* duet: session time of its time 0 */
    int64_t  start_ns;          /* duet: CLOCK_MONOTONIC of its time 0 */
    gen_out  held;              /* duet: an event sampled too far ahead, not yet sent */
    int      have_held;
    int      thinking;          /* candidates prepared: the engine thinks while idle */
    uint32_t prepared_id;       /* the GEN_PREPARE they were prepared for */
    void    *swap;              /* GEN_SWAP's state, waiting for the continuation's end */
} gen_run;

static void gen_failed(generator *g)
{
    atomic_store(&g->failed, 1);
}

/* GEN_RESPOND / GEN_REROLL: a continuation starts. */
static void start_continuation(generator *g, gen_run *r, const gen_cmd *c)
{
    const engine_ops *e = g->engine;
    if (r->generating)
        e->end(g->state, 0);
    if (c->kind == GEN_REROLL)
        e->rewind(g->state);
    r->generating = e->begin(g->state, c->at, &c->spec) == 0;
    if (!r->generating) {
        gen_failed(g);
        gen_out o = { .id = c->id, .done = 1 };
        push_out(g, &o);
    }
    r->cur = c->id;
    r->duet = c->spec.duet;
    r->at = c->at;
    r->start_ns = c->start_ns;
    r->have_held = 0;
}

/* GEN_PREPARE: the verdict on the silence (phrase_end = auto), sent back
 * first (it is cheap: the logits are there), then the candidates. */
static void prepare(generator *g, gen_run *r, const gen_cmd *c)
{
    const engine_ops *e = g->engine;
    if (c->turn.max_ms > 0 && e->odds) {
        turn_odds o;
        if (e->odds(g->state, c->at, &o) < 0) {
            gen_failed(g);
        } else {
            gen_out v = { .id = c->id, .turn = 1 };
            double margin;
            v.ev.time = turn_verdict(&o, &c->turn, &margin) / 1000.0;
            v.margin = (float)margin;
            push_out(g, &v);
        }
    }
    if (e->prepare && e->think) {
        if (e->prepare(g->state, c->at, &c->spec) < 0) {
            gen_failed(g);
        } else {
            r->thinking = 1;
            r->prepared_id = c->id;
        }
    }
}

/* Runs the commands waiting in the ring; 1 when told to quit. */
static int run_commands(generator *g, gen_run *r)
{
    const engine_ops *e = g->engine;
    gen_cmd c;
    while (ring_pop(&g->cmds, &c)) {
        atomic_store(&g->progress_ns, clock_now_ns());
        switch (c.kind) {
        case GEN_QUIT:
            return 1;
        case GEN_LISTEN:
            /* the player came back (a note, not the pedal): the model stops */
            if (r->generating && !r->duet && (c.heard.status & 0xF0) != 0xB0) {
                e->end(g->state, 0);
                r->generating = 0;
            }
            if (e->listen(g->state, &c.heard) < 0)
                gen_failed(g);
            break;
        case GEN_STOP:
            if (r->generating)
                e->end(g->state, c.at);
            if (e->keep_played && !r->duet && e->keep_played(g->state, c.at) < 0)
                gen_failed(g);
            r->generating = 0;
            r->have_held = 0;
            break;
        case GEN_REROLL:
        case GEN_RESPOND:
            start_continuation(g, r, &c);
            break;
        case GEN_PREPARE:
            if (!r->generating)
                prepare(g, r, &c);
            break;
        case GEN_SWAP:
            if (r->swap)                /* the loop sends one at a time; a second replaces it */
                e->close(r->swap);
            r->swap = c.state;
            break;
        case GEN_REPLAY:
            if (r->generating)
                e->end(g->state, 0);
            r->generating = 0;
            r->have_held = 0;
            if (e->replay && e->replay(g->state, c.at, c.replay, c.n_replay) < 0)
                gen_failed(g);
            free(c.replay);
            break;
        }
    }
    return 0;
}

/* Duet: the event held back goes out once the music is near; until then
 * the thread waits for commands (the player's notes come first). */
static void release_held(generator *g, gen_run *r)
{
    int64_t due = r->start_ns + (int64_t)((r->held.ev.time - DUET_AHEAD_S) * 1e9);
    if (clock_now_ns() < due) {
        wait_cmd_until(g, due);
        return;
    }
    r->have_held = 0;
    if (r->held.ev.kind != CONT_TIME)   /* time passing is not sent on */
        push_out(g, &r->held);
}

/* Samples the next event of the continuation and sends it (or holds it, in
 * a duet, until the music is near). */
static void generate_one(generator *g, gen_run *r)
{
    const engine_ops *e = g->engine;
    gen_out o = { .id = r->cur };
    /* a duet: what the player played until a moment ago is in the context
     * (5 ms back, so a message the loop stamped just before is not late) */
    if (r->duet && e->hear_until
        && e->hear_until(g->state, r->at + (double)(clock_now_ns() - r->start_ns) / 1e9 - 0.005) < 0)
        gen_failed(g);
    int rc = e->next(g->state, &o.ev);
    if (rc < 0)
        gen_failed(g);
    if (rc > 0)
        send_heads(g, &o.ev);
    if (rc <= 0) {                      /* its end, or the engine failed */
        e->end(g->state, o.ev.time);
        r->generating = 0;
        o.done = 1;
    }
    if (r->duet && !o.done && clock_now_ns() < r->start_ns + (int64_t)((o.ev.time - DUET_AHEAD_S) * 1e9)) {
        r->held = o;
        r->have_held = 1;
        return;
    }
    if (o.ev.kind == CONT_TIME && !o.done)
        return;                         /* time passing, already due */
    push_out(g, &o);
}

/* Idle, with candidates prepared: one step of them (commands first, each
 * pass, so the player playing on or the answer falling due is seen after
 * at most one batched decode). */
static void think(generator *g, gen_run *r)
{
    int rc = g->engine->think(g->state);
    if (rc < 0)
        gen_failed(g);
    r->thinking = rc > 0;
}

/* GEN_SWAP, between continuations: the new state takes the old one's
 * place (engine take_over) and the old one is closed; or, when it cannot,
 * the new one is.  The verdict goes back to the loop. */
static void swap_engine(generator *g, gen_run *r)
{
    const engine_ops *e = g->engine;
    void *fresh = r->swap;
    gen_out o = { .swap = 1 };
    r->swap = NULL;
    r->thinking = 0;                    /* take_over drops the candidates */
    if (e->take_over && e->take_over(fresh, g->state) < 0) {
        e->close(fresh);
        o.swap = -1;
    } else {
        e->close(g->state);
        g->state = fresh;
        g->watching = 0;                /* sync_watch tells the new state */
    }
    push_out(g, &o);
}

/* What the loop may know of the prepared answer: ready to start at once,
 * or not (any command may have taken or dropped it). */
static void publish_ready(generator *g, const gen_run *r)
{
    const engine_ops *e = g->engine;
    uint32_t id = !r->generating && e->ready && e->ready(g->state) ? r->prepared_id : 0;
    if (atomic_load_explicit(&g->ready, memory_order_relaxed) != id)
        atomic_store(&g->ready, id);
}

uint32_t generator_ready(generator *g)
{
    return atomic_load(&g->ready);
}

static void *generator_main(void *arg)
{
    generator *g = arg;
    gen_run r;
    memset(&r, 0, sizeof r);
    for (;;) {
        atomic_store(&g->progress_ns, clock_now_ns());
        if (run_commands(g, &r)) {
            if (r.swap)
                g->engine->close(r.swap);
            return NULL;
        }
        if (r.swap && !r.generating)
            swap_engine(g, &r);
        sync_watch(g);
        if (r.generating)
            r.thinking = 0;             /* a begin took (or dropped) the candidates */
        publish_ready(g, &r);
        if ((!r.generating && !r.thinking) || r.have_held)
            atomic_store(&g->progress_ns, 0);   /* waiting: idle, not stalled */
        if (!r.generating && r.thinking) {
            think(g, &r);
            publish_ready(g, &r);
        }
        else if (!r.generating)
            drain_fd(g->wake_gen);      /* blocks until the next command */
        else if (r.have_held)
            release_held(g, &r);        /* commands first, each pass */
        else
            generate_one(g, &r);
    }
}

int generator_start(generator *g, const engine_ops *engine, const config *cfg)
{
    memset(g, 0, sizeof *g);
    g->wake_gen = g->wake_loop = -1;
    g->engine = engine;
    if (ring_init(&g->cmds, 4096, sizeof(gen_cmd)) < 0 ||
        ring_init(&g->outs, GEN_RING, sizeof(gen_out)) < 0 ||
        ring_init(&g->heads, GEN_HEADS_RING, sizeof(note_attention)) < 0) {
        log_error("cannot start the generator: out of memory");
        goto fail;
    }
    g->wake_gen = eventfd(0, EFD_CLOEXEC);
    g->wake_loop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (g->wake_gen < 0 || g->wake_loop < 0) {
        log_error("cannot start the generator: eventfd: %s", strerror(errno));
        goto fail;
    }
    if (engine->open(&g->state, cfg) < 0)
        goto fail;
    generator_set_speed(g, engine->ms_per_event ? engine->ms_per_event(g->state) : 0, cfg->context_events);
    int err = pthread_create(&g->thread, NULL, generator_main, g);
    if (err) {
        log_error("cannot start the generator thread: %s", strerror(err));
        engine->close(g->state);
        g->state = NULL;
        goto fail;
    }
    g->running = 1;
    return 0;
fail:
    generator_stop(g);
    return -1;
}

void generator_stop(generator *g)
{
    if (g->running) {
        gen_cmd q;
        memset(&q, 0, sizeof q);
        q.kind = GEN_QUIT;
        while (generator_send(g, &q) < 0)
            usleep(1000);
        pthread_join(g->thread, NULL);
        g->running = 0;
        gen_cmd left;
        while (ring_pop(&g->cmds, &left))   /* a replay or swap the thread did not take */
            if (left.kind == GEN_REPLAY)
                free(left.replay);
            else if (left.kind == GEN_SWAP)
                g->engine->close(left.state);
        g->engine->close(g->state);
        g->state = NULL;
    }
    if (g->wake_gen >= 0)
        close(g->wake_gen);
    if (g->wake_loop >= 0)
        close(g->wake_loop);
    g->wake_gen = g->wake_loop = -1;
    ring_free(&g->cmds);
    ring_free(&g->outs);
    ring_free(&g->heads);
}

void generator_set_speed(generator *g, double ms_per_event, int context_events)
{
    g->ms_per_event = ms_per_event;
    /* The slowest step it can take, a window slide (3/4 of the context
     * prefilled), costs less than a whole context of decode steps; stalled
     * means four times that without progress, and never less than 5 s. */
    g->stall_ns = (int64_t)(4.0 * context_events * ms_per_event * 1e6);
    if (g->stall_ns < GEN_STALL_MIN_NS)
        g->stall_ns = GEN_STALL_MIN_NS;
}

int64_t generator_stalled_ns(const generator *g, int64_t now)
{
    int64_t since = atomic_load(&g->progress_ns);
    return since && now > since ? now - since : 0;
}

int generator_send(generator *g, const gen_cmd *c)
{
    if (ring_push(&g->cmds, c) < 0)
        return -1;
    ring_fd(g->wake_gen);
    return 0;
}

int generator_idle(generator *g)
{
    return ring_drained(&g->cmds) && atomic_load(&g->progress_ns) == 0;
}

int generator_receive(generator *g, gen_out *o)
{
    return ring_pop(&g->outs, o);
}

int generator_receive_heads(generator *g, note_attention *a)
{
    return ring_pop(&g->heads, a);
}

void generator_ack_wake(generator *g)
{
    drain_fd(g->wake_loop);
}
