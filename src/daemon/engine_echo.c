/* engine_echo.c: a model-free engine that answers with the last phrase a fifth up. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/perf.h"
#include "daemon/engine.h"
#include "util/log.h"

#define ECHO_MAX 4096

typedef struct echo_state {
    smf_event phrase[ECHO_MAX];     /* the player's messages since the last answer */
    int       n;
    note_list notes;                /* the phrase's notes (the codec folds the pedal) */
    cont_event answer[ECHO_MAX];     /* the answer being played: the notes' events */
    int       n_answer, next;
    double    seconds;              /* its length limits (cont_spec) */
    int       max_events, n_out;
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
    echo_state *e = state;
    note_list_free(&e->notes);
    free(e);
}

static int echo_listen(void *state, const smf_event *msg)
{
    echo_state *e = state;
    if (e->listening_since_answer == 0) {   /* first message after an answer */
        e->n = 0;
        e->listening_since_answer = 1;
    }
    if (e->n < ECHO_MAX)
        e->phrase[e->n++] = *msg;
    return 0;
}

/* The answer: the phrase's notes (pedal folded by the codec, as the model
 * hears them) as events from the first one on, note-offs before note-ons
 * at one time; a note that only started as the phrase ended is left out. */
static int echo_begin(void *state, double at, const cont_spec *spec)
{
    echo_state *e = state;
    smf_event *ev = NULL;
    size_t n_ev = 0;
    (void)at;
    e->seconds = spec->seconds;
    e->max_events = spec->max_events;
    e->n_out = 0;
    e->listening_since_answer = 0;
    e->n_answer = e->next = 0;
    e->notes.n = 0;
    if (perf_notes_from_midi(e->phrase, (size_t)e->n, &e->notes) < 0)
        return -1;
    size_t kept = 0;
    for (size_t i = 0; i < e->notes.n; i++)     /* ends with the phrase: still sounding */
        if (e->notes.notes[i].release > e->notes.notes[i].onset)
            e->notes.notes[kept++] = e->notes.notes[i];
    e->notes.n = kept;
    if (perf_notes_to_events(e->notes.notes, e->notes.n, &ev, &n_ev) < 0)
        return -1;
    double shift = n_ev ? ev[0].time : 0;     /* the answer starts with its first note */
    for (size_t i = 0; i < n_ev && e->n_answer < ECHO_MAX; i++) {
        int on = (ev[i].status & 0xF0) == 0x90;
        e->answer[e->n_answer++] = (cont_event){ ev[i].time - shift, on ? CONT_NOTE_ON : CONT_NOTE_OFF,
                                                 ev[i].data1, (uint8_t)(on ? ev[i].data2 : 0), 0 };
    }
    free(ev);
    return 0;
}

static int echo_next(void *state, cont_event *out)
{
    echo_state *e = state;
    while (e->next < e->n_answer && e->n_out < e->max_events) {
        cont_event ev = e->answer[e->next++];
        if (ev.time > e->seconds)
            return 0;
        if (ev.pitch + 7 > 127)
            continue;
        ev.pitch = (uint8_t)(ev.pitch + 7);
        e->n_out++;
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
    .name = "echo",
    .open = echo_open,
    .close = echo_close,
    .listen = echo_listen,
    .begin = echo_begin,
    .next = echo_next,
    .end = echo_end,
    .rewind = echo_rewind,
};

/* "stall": echo's first event, then it never returns from the engine, as a
 * model stuck in a step would (for the watchdog's test). */
static int stall_next(void *state, cont_event *out)
{
    echo_state *e = state;
    if (e->next == 0)
        return echo_next(state, out);
    log_warn("stall engine: hanging in the engine now, as asked (model = stall)");
    for (;;)
        pause();
}

const engine_ops engine_stall = {
    .name = "stall",
    .open = echo_open,
    .close = echo_close,
    .listen = echo_listen,
    .begin = echo_begin,
    .next = stall_next,
    .end = echo_end,
    .rewind = echo_rewind,
};
