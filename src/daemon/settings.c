/* settings.c: options changed while the service runs (`ctl set`, a controller, reload), each through its apply step. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/service.h"
#include "util/clock.h"

int apply_value(struct service *sv, char *why, size_t len)
{
    (void)sv;
    (void)why;
    (void)len;
    return 0;
}

int apply_scheduler(struct service *sv, char *why, size_t len)
{
    (void)why;
    (void)len;
    sv->sched.max_note_ns = (int64_t)sv->cfg.play.max_note_ms * 1000000;
    sv->sched.max_held = sv->cfg.play.max_held;
    return 0;
}

int apply_seed(struct service *sv, char *why, size_t len)
{
    (void)why;
    (void)len;
    sv->seed = sv->cfg.seed ? (uint64_t)sv->cfg.seed : (uint64_t)clock_now_ns();
    return 0;
}

int apply_gain(struct service *sv, char *why, size_t len)
{
    char value[32];
    (void)why;
    (void)len;
    snprintf(value, sizeof value, "%.9g", sv->cfg.gain);
    for (int i = 0; i < sv->n_outputs; i++)
        midi_port_update(sv->outputs[i], "gain", value);
    return 0;
}

/* The recording is written (a temporary file, then renamed) when the
 * service stops: a folder it cannot write in would lose the session then. */
int apply_recording(struct service *sv, char *why, size_t len)
{
    char dir[CONFIG_STR_MAX];
    const char *path = sv->cfg.recording, *slash = strrchr(path, '/');
    if (!path[0])
        return 0;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    if (access(dir, W_OK | X_OK) < 0) {
        snprintf(why, len, "cannot write in %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* sync = link joins the Ableton Link session (its sockets and thread
 * exist only then); any other value leaves it.  The answer playing goes
 * on; the next one is timed on the new time line. */
int apply_sync(struct service *sv, char *why, size_t len)
{
    if (sv->cfg.sync != SYNC_LINK) {
        link_sync_leave(&sv->link);
        return 0;
    }
    if (link_sync_joined(&sv->link))
        return 0;
    return link_sync_join(&sv->link, sv->cfg.tempo, sv->cfg.link_start_stop, why, len);
}

/* link_start_stop: the loop reads the session again at its next poll
 * (link_sync wakes it), where a stopped session silences the model. */
int apply_link(struct service *sv, char *why, size_t len)
{
    (void)why;
    (void)len;
    link_sync_set_start_stop(&sv->link, sv->cfg.link_start_stop);
    return 0;
}

/* With sync = link the tempo goes to the session at once; otherwise it is
 * the tempo a later join proposes (`ctl tempo` says that it needs link). */
int apply_tempo(struct service *sv, char *why, size_t len)
{
    (void)why;
    (void)len;
    if (link_sync_joined(&sv->link))
        link_sync_set_tempo(&sv->link, sv->cfg.tempo);
    return 0;
}

/* The file it names (auto resolved again) loads on a thread of its own
 * and takes over between answers; a file that cannot be found is refused
 * now, one that does not load is logged and the old one plays on. */
int apply_model(struct service *sv, char *why, size_t len)
{
    return model_switch_request(sv, why, len);
}

/* Runs O's apply step for the value now in the service's config; on a
 * refusal writes "KEY = VALUE: reason" into WHY. */
static int apply_option(service *sv, const option_def *o, char *why, size_t len)
{
    char reason[512], value[CONFIG_STR_MAX];
    if (o->apply(sv, reason, sizeof reason) == 0) {
        watch_set(sv, o);
        return 0;
    }
    /* a long value is cut to half of WHY, the reason after it */
    if (snprintf(why, len, "%s = %.*s: %s", o->name, (int)(len / 2),
                 config_format(&sv->cfg, o, value, sizeof value), reason) >= (int)len)
        why[len - 1] = '\0';
    return -1;
}

/* O's value goes back from OTHER (which then holds the refused one again)
 * and is applied again; a refusal then too is only logged. */
static void put_back(service *sv, config *other, const option_def *o)
{
    char why[1024];
    config_swap(&sv->cfg, other, o);
    if (apply_option(sv, o, why, sizeof why) < 0)
        log_warn("putting %s back: %s", o->name, why);
}

int service_set_option(service *sv, const option_def *o, const char *value, char *why, size_t len)
{
    config next = sv->cfg;
    char reason[256];
    if (config_set(&next, o, value, reason, sizeof reason) < 0) {
        snprintf(why, len, "%s: %s", o->name, reason);
        return -1;
    }
    if (config_check_change(&next, o, why, len) < 0)
        return -1;
    config_swap(&sv->cfg, &next, o);
    if (apply_option(sv, o, why, len) < 0) {
        put_back(sv, &next, o);
        return -1;
    }
    return 0;
}

/* The settings a fresh start would read: defaults, the file, the --set
 * overrides, and the rules across keys. */
static int load_config(const service *sv, config *c)
{
    char why[512], source[CONFIG_STR_MAX + 16];
    config_defaults(c);
    if (sv->config_path && config_load_file(c, sv->config_path) < 0)
        return -1;
    for (int i = 0; i < sv->n_sets; i++)
        if (config_set_arg(c, sv->sets[i]) < 0)
            return -1;
    if (config_check(c, why, sizeof why) < 0) {
        log_error("%s: %s", config_source(sv->config_path, sv->n_sets, source, sizeof source), why);
        return -1;
    }
    return 0;
}

/* Each live option that differs in FRESH is swapped in and applied, in
 * table order; FRESH then holds the old values.  When a step refuses, the
 * ones applied go back in reverse order and -1 comes back with the
 * reason in WHY. */
static int apply_changes(service *sv, config *fresh, char *why, size_t len)
{
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        if (config_needs_restart(o) || !config_differs(&sv->cfg, fresh, o))
            continue;
        config_swap(&sv->cfg, fresh, o);
        if (apply_option(sv, o, why, len) == 0)
            continue;
        put_back(sv, fresh, o);
        while (i-- > 0) {
            const option_def *done = &config_options[i];
            if (!config_needs_restart(done) && config_differs(&sv->cfg, fresh, done))
                put_back(sv, fresh, done);
        }
        return -1;
    }
    return 0;
}

/* "reload: model, input changed; they take effect after a restart". */
static void log_restart_only(const service *sv, const config *fresh)
{
    char names[1024];
    size_t used = 0;
    int n = 0;
    names[0] = '\0';
    for (size_t i = 0; i < config_n_options && used < sizeof names; i++) {
        const option_def *o = &config_options[i];
        if (config_needs_restart(o) && config_differs(&sv->cfg, fresh, o))
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", n++ ? ", " : "",
                                     o->name);
    }
    if (n > 0)
        log_warn("reload: %s changed; %s after a restart", names,
                 n > 1 ? "they take effect" : "it takes effect");
}

void service_reload(service *sv)
{
    config fresh;
    char why[1024], value[CONFIG_STR_MAX];
    sv->reload = 0;
    if (load_config(sv, &fresh) < 0) {
        log_error("reload failed: keeping the settings in use");
        return;
    }
    if (apply_changes(sv, &fresh, why, sizeof why) < 0) {
        log_error("reload failed: %s; keeping the settings in use", why);
        return;
    }
    log_restart_only(sv, &fresh);
    if (model_switch_request(sv, why, sizeof why) < 0)     /* auto: a newer adapted model? */
        log_error("reload: model: %s; the model in use plays on", why);
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        if (!config_needs_restart(o) && config_differs(&sv->cfg, &fresh, o))
            log_info("reload: %s = %s", o->name, config_format(&sv->cfg, o, value, sizeof value));
    }
}
