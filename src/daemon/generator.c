/* generator.c: the generator thread, its command/output rings and wake-ups. */
#include "daemon/generator.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/log.h"

#define GEN_RING 16384      /* > the longest continuation (8192 events) + its end */

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

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Waits for the next command, or until DEADLINE (ns, CLOCK_MONOTONIC). */
static void wait_cmd_until(generator *g, int64_t deadline)
{
    int64_t left = deadline - mono_ns();
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

static void *generator_main(void *arg)
{
    generator *g = arg;
    const engine_ops *e = g->engine;
    gen_cmd c;
    uint32_t cur = 0;           /* continuation being generated */
    int generating = 0, count = 0;
    double max_seconds = 0;
    int max_events = 0;
    int duet = 0;               /* the continuation is a duet (see gen_cmd) */
    int64_t start_ns = 0;
    gen_out held;               /* duet: an event sampled too far ahead, not yet sent */
    int have_held = 0;

    for (;;) {
        atomic_fetch_add(&g->heartbeat, 1);
        while (ring_pop(&g->cmds, &c)) {
            switch (c.kind) {
            case GEN_QUIT:
                return NULL;
            case GEN_LISTEN:
                if (generating && !duet) {  /* the player came back: the model stops */
                    e->end(g->state, 0);
                    generating = 0;
                }
                if (e->listen(g->state, &c.ev) < 0)
                    atomic_store(&g->failed, 1);
                break;
            case GEN_STOP:
                if (generating)
                    e->end(g->state, c.at);
                generating = 0;
                have_held = 0;
                break;
            case GEN_REROLL:
            case GEN_RESPOND:
                if (generating)
                    e->end(g->state, 0);
                if (c.kind == GEN_REROLL)
                    e->rewind(g->state);
                generating = e->begin(g->state, c.at, &c.s) == 0;
                if (!generating) {
                    atomic_store(&g->failed, 1);
                    gen_out o = { c.id, 1, { 0, 0, 0, 0 } };
                    push_out(g, &o);
                }
                cur = c.id;
                count = 0;
                max_events = c.max_events;
                max_seconds = c.max_seconds;
                duet = c.duet;
                start_ns = c.start_ns;
                have_held = 0;
                break;
            }
        }
        if (!generating) {
            drain_fd(g->wake_gen);      /* blocks until the next command */
            continue;
        }
        if (have_held) {                /* duet: send it once the music is near */
            int64_t due = start_ns + (int64_t)((held.ev.time - DUET_AHEAD_S) * 1e9);
            if (mono_ns() < due) {
                wait_cmd_until(g, due);
                continue;               /* commands first (the player's notes) */
            }
            have_held = 0;
            if (held.ev.on != 2)        /* time passing is not sent on */
                push_out(g, &held);
            continue;
        }
        gen_out o = { cur, 0, { 0, 0, 0, 0 } };
        int r = e->next(g->state, &o.ev);
        if (r < 0)
            atomic_store(&g->failed, 1);
        if (r <= 0 || o.ev.time > max_seconds || ++count > max_events) {
            e->end(g->state, max_seconds);
            generating = 0;
            o.done = 1;
        }
        if (duet && !o.done && mono_ns() < start_ns + (int64_t)((o.ev.time - DUET_AHEAD_S) * 1e9)) {
            held = o;
            have_held = 1;
            continue;
        }
        if (o.ev.on == 2 && !o.done)
            continue;                   /* time passing, already due */
        push_out(g, &o);
    }
}

int generator_start(generator *g, const engine_ops *engine, const config *cfg)
{
    memset(g, 0, sizeof *g);
    g->wake_gen = g->wake_loop = -1;
    g->engine = engine;
    if (ring_init(&g->cmds, 4096, sizeof(gen_cmd)) < 0 ||
        ring_init(&g->outs, GEN_RING, sizeof(gen_out)) < 0) {
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
}

int generator_send(generator *g, const gen_cmd *c)
{
    if (ring_push(&g->cmds, c) < 0)
        return -1;
    ring_fd(g->wake_gen);
    return 0;
}

int generator_receive(generator *g, gen_out *o)
{
    return ring_pop(&g->outs, o);
}

void generator_ack_wake(generator *g)
{
    drain_fd(g->wake_loop);
}
