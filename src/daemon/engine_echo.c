/* engine_echo.c: a model-free engine that answers with the last phrase a fifth up. */
#include <stdlib.h>
#include <string.h>

#include "daemon/engine.h"
#include "util/log.h"

#define ECHO_MAX 4096

typedef struct echo_state {
    gen_event phrase[ECHO_MAX];     /* the player's events since the last answer */
    int       n;
    gen_event answer[ECHO_MAX];     /* the answer being played (copy of phrase) */
    int       n_answer, next;
    double    shift;                /* subtracted from the phrase's times */
    int       listening_since_answer;
} echo_state;

static int echo_open(void **state, const config *cfg)
{
    (void)cfg;
    echo_state *e = calloc(1, sizeof *e);
    if (!e) {
        log_error("cannot start the echo engine: out of memory");
        return -1;
    }
    *state = e;
    return 0;
}

static void echo_close(void *state)
{
    free(state);
}

static int echo_listen(void *state, const gen_event *ev)
{
    echo_state *e = state;
    if (e->listening_since_answer == 0) {   /* first event after an answer */
        e->n = 0;
        e->listening_since_answer = 1;
    }
    if (e->n < ECHO_MAX)
        e->phrase[e->n++] = *ev;
    return 0;
}

static int echo_begin(void *state, double at, const sampling *s)
{
    echo_state *e = state;
    (void)at;
    (void)s;
    e->listening_since_answer = 0;
    e->n_answer = e->n;
    memcpy(e->answer, e->phrase, (size_t)e->n * sizeof *e->phrase);
    e->shift = e->n ? e->phrase[0].time : 0;
    e->next = 0;
    return 0;
}

static int echo_next(void *state, gen_event *out)
{
    echo_state *e = state;
    while (e->next < e->n_answer) {
        gen_event ev = e->answer[e->next++];
        if (ev.pitch + 7 > 127)
            continue;
        ev.pitch = (uint8_t)(ev.pitch + 7);
        ev.time -= e->shift;
        *out = ev;
        return 1;
    }
    return 0;
}

static void echo_end(void *state, double played)
{
    (void)state;
    (void)played;
}

static void echo_rewind(void *state)
{
    echo_state *e = state;
    e->listening_since_answer = 1;  /* the next begin answers the same phrase */
}

const engine_ops engine_echo = {
    "echo", echo_open, echo_close, echo_listen, echo_begin, echo_next, echo_end, echo_rewind,
};
