/* model_switch.h: `serve` changes models live (`ctl model`, `set model`, a reload that resolves `model = auto` to another file): the new one loads on a thread of its own and takes over between answers; the old one stays when it cannot. */
#ifndef CONTINUO_DAEMON_MODEL_SWITCH_H
#define CONTINUO_DAEMON_MODEL_SWITCH_H

#include <pthread.h>
#include <stdatomic.h>

#include "daemon/adapted.h"
#include "daemon/engine.h"
#include "daemon/options.h"

struct service;

/* The loop's side of a switch, in steps: a request resolves the setting
 * to a file (adapted.h) and, when it is not the file in use, starts the
 * loader; the loader opens the engine state there (the model mapped, its
 * KV cache and pool, a decode step timed: seconds for a big one, while the
 * old model plays on) and rings the loop; the loop sends the state to the
 * generator (GEN_SWAP), which swaps it in once no answer is being
 * generated and hands back a verdict.  One switch at a time: a request
 * during one is resolved again when it is over. */
typedef struct model_switch {
    char        in_use[ADAPTED_PATH_MAX];   /* the file the generator plays with ("" none) */
    char        want[ADAPTED_PATH_MAX];     /* the file loading or swapping in */
    int         loading;        /* the loader thread runs (or is done, not joined) */
    int         swapping;       /* GEN_SWAP sent, its verdict not back */
    int         again;          /* a request came during the switch */
    pthread_t   thread;
    _Atomic int loaded;         /* loader: 1 when done, STATE set or NULL */
    void       *state;          /* the loader's result; NULL: it failed (logged) */
    double      ms_per_event;   /* the new state's, timed at open */
    config      cfg;            /* the loader's copy: model = WANT */
    const engine_ops *engine;
    int         wake_fd;        /* rung when the loader is done (the loop's) */
} model_switch;

/* After the generator started: the file its engine opened (engine file). */
void model_switch_init(model_switch *ms, const engine_ops *engine, void *state, int wake_fd);
/* The model setting in SV's config, resolved again: a switch starts when it
 * names another file than the one in use.  0 (started, nothing to do, or
 * queued behind the switch under way), or -1 with the reason in WHY: no
 * such file, or a setting that changes the engine (echo, stall: after a
 * restart). */
int  model_switch_request(struct service *sv, char *why, size_t len);
/* The loop, woken: a finished load goes to the generator, or its failure
 * is logged and the old model plays on. */
void model_switch_poll(struct service *sv);
/* The generator's verdict on the swap (gen_out.swap: 1 or -1). */
void model_switch_swapped(struct service *sv, int ok);
/* Joins the loader and closes what it opened (before generator_stop). */
void model_switch_stop(model_switch *ms);

#endif
