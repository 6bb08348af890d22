/* model_switch.c: a model switched live: loaded on a thread of its own, taken over between answers by the generator, the old one kept when the new one fails. */
#include "daemon/model_switch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/service.h"
#include "model/model.h"
#include "util/log.h"

static void copy_path(char *dst, const char *src)
{
    snprintf(dst, ADAPTED_PATH_MAX, "%s", src ? src : "");
}

void model_switch_init(model_switch *ms, const engine_ops *engine, void *state, int wake_fd)
{
    memset(ms, 0, sizeof *ms);
    ms->engine = engine;
    ms->wake_fd = wake_fd;
    copy_path(ms->in_use, engine->file ? engine->file(state) : "");
}

/* The loader thread: the engine state opened on MS->cfg, timed, handed
 * back through MS->state and the loop's eventfd. */
static void *loader_main(void *arg)
{
    model_switch *ms = arg;
    void *state = NULL;
    if (ms->engine->open(&state, &ms->cfg) == 0) {
        ms->state = state;
        ms->ms_per_event = ms->engine->ms_per_event ? ms->engine->ms_per_event(state) : 0;
    }
    atomic_store(&ms->loaded, 1);
    uint64_t one = 1;
    ssize_t w = write(ms->wake_fd, &one, sizeof one);
    (void)w;
    return NULL;
}

/* The file the model setting names now: `auto` resolved again (adapted.h),
 * the shipped one found.  0 with OUT set, or -1 with WHY. */
static int resolve(const config *cfg, char *out, char *why, size_t len)
{
    char adapted[ADAPTED_PATH_MAX];
    const char *setting = adapted_model_for(cfg->model, adapted, sizeof adapted);
    if (model_resolve_path(setting, out, ADAPTED_PATH_MAX) < 0) {
        snprintf(why, len, "no model file %s (see the log for the places tried)", setting ? setting : "found");
        return -1;
    }
    if (access(out, R_OK) < 0) {
        snprintf(why, len, "%s: %s", out, strerror(errno));
        return -1;
    }
    return 0;
}

int model_switch_request(service *sv, char *why, size_t len)
{
    model_switch *ms = &sv->models;
    char path[ADAPTED_PATH_MAX];
    if (engine_for(&sv->cfg) != sv->gen.engine) {
        snprintf(why, len, "%s plays with the %s engine, this service with %s: it takes effect after a restart",
                 sv->cfg.model, engine_for(&sv->cfg)->name, sv->gen.engine->name);
        return -1;
    }
    if (!ms->engine->file)
        return 0;                       /* an engine without a model file */
    if (resolve(&sv->cfg, path, why, len) < 0)
        return -1;
    if (ms->loading || ms->swapping) {
        ms->again = strcmp(path, ms->want) != 0;
        return 0;
    }
    if (strcmp(path, ms->in_use) == 0)
        return 0;
    ms->cfg = sv->cfg;
    if (snprintf(ms->cfg.model, sizeof ms->cfg.model, "%s", path) >= (int)sizeof ms->cfg.model) {
        snprintf(why, len, "%s: a path longer than %zu bytes", path, sizeof ms->cfg.model - 1);
        return -1;
    }
    copy_path(ms->want, path);
    atomic_store(&ms->loaded, 0);
    ms->state = NULL;
    int err = pthread_create(&ms->thread, NULL, loader_main, ms);
    if (err) {
        snprintf(why, len, "cannot start loading %s: %s", path, strerror(err));
        return -1;
    }
    ms->loading = 1;
    log_info("model: loading %s (%s plays on meanwhile)", path, ms->in_use);
    return 0;
}

/* A request that came during the switch, now that it is over. */
static void request_again(service *sv)
{
    char why[1024];
    if (!sv->models.again)
        return;
    sv->models.again = 0;
    if (model_switch_request(sv, why, sizeof why) < 0)
        log_error("model: %s; %s plays on", why, sv->models.in_use);
}

void model_switch_poll(service *sv)
{
    model_switch *ms = &sv->models;
    if (!ms->loading || !atomic_load(&ms->loaded))
        return;
    pthread_join(ms->thread, NULL);
    ms->loading = 0;
    if (!ms->state) {
        log_error("model: %s did not load (see above); %s plays on", ms->want, ms->in_use);
        request_again(sv);
        return;
    }
    gen_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = GEN_SWAP;
    c.state = ms->state;
    ms->state = NULL;
    if (generator_send(&sv->gen, &c) < 0) {
        log_error("model: the generator's commands are full: %s not taken; %s plays on", ms->want, ms->in_use);
        ms->engine->close(c.state);
        request_again(sv);
        return;
    }
    ms->swapping = 1;
}

void model_switch_swapped(service *sv, int ok)
{
    model_switch *ms = &sv->models;
    if (!ms->swapping)
        return;
    ms->swapping = 0;
    if (ok > 0) {
        copy_path(ms->in_use, ms->want);
        generator_set_speed(&sv->gen, ms->ms_per_event, sv->cfg.context_events);
        log_info("model: now %s (%.2f ms per event, head start %d ms)", ms->in_use, ms->ms_per_event,
                 timeline_lookahead_ms(sv));
    } else {
        log_error("model: %s could not take over the context (see above); %s plays on", ms->want, ms->in_use);
    }
    ms->want[0] = '\0';
    request_again(sv);
}

void model_switch_stop(model_switch *ms)
{
    if (ms->loading) {
        pthread_join(ms->thread, NULL);
        ms->loading = 0;
        if (ms->state)
            ms->engine->close(ms->state);
        ms->state = NULL;
    }
}
