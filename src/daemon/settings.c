/* settings.c: options changed while the service runs (`ctl set`, reload), each through its apply step. */
#include <stdio.h>
#include <string.h>

#include "daemon/service.h"
#include "util/clock.h"

void apply_value(struct service *sv)
{
    (void)sv;
}

void apply_scheduler(struct service *sv)
{
    sv->sched.max_note_ns = (int64_t)sv->cfg.max_note_ms * 1000000;
    sv->sched.max_held = sv->cfg.max_held_notes;
}

void apply_seed(struct service *sv)
{
    sv->seed = sv->cfg.seed ? (uint64_t)sv->cfg.seed : (uint64_t)clock_now_ns();
}

void apply_gain(struct service *sv)
{
    char value[32];
    snprintf(value, sizeof value, "%.9g", sv->cfg.gain);
    for (int i = 0; i < sv->n_outputs; i++)
        midi_port_update(sv->outputs[i], "gain", value);
}

int service_set_option(service *sv, const option_def *o, const char *value, char *why, size_t len)
{
    if (config_set(&sv->cfg, o, value, why, len) < 0)
        return -1;
    o->apply(sv);
    return 0;
}

/* The settings a fresh start would read: defaults, the file, the --set overrides. */
static int load_config(config *c, const char *path, char *const *sets, int n_sets)
{
    config_defaults(c);
    if (path && config_load_file(c, path) < 0)
        return -1;
    for (int i = 0; i < n_sets; i++)
        if (config_set_arg(c, sets[i]) < 0)
            return -1;
    return 0;
}

void service_reload(service *sv)
{
    config fresh;
    char a[CONFIG_STR_MAX], b[CONFIG_STR_MAX];
    sv->reload = 0;
    if (load_config(&fresh, sv->config_path, sv->sets, sv->n_sets) < 0) {
        log_error("reload failed: keeping the settings in use");
        return;
    }
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        config_format(&fresh, o, a, sizeof a);
        if (strcmp(a, config_format(&sv->cfg, o, b, sizeof b)) == 0)
            continue;
        if (config_needs_restart(o)) {
            log_warn("reload: %s changed; it takes effect after a restart", o->name);
            continue;
        }
        config_copy(&sv->cfg, &fresh, o);
        o->apply(sv);
        log_info("reload: %s = %s", o->name, a);
    }
}
