/* engine.c: picks the engine the config names. */
#include <string.h>

#include "config.h"
#include "daemon/engine.h"
#include "util/log.h"

const engine_ops *engine_for(const config *cfg)
{
    if (strcmp(cfg->model, "echo") == 0)
        return &engine_echo;
    if (!engine_model) {
        log_error("cannot load model %s: this build has no model engine yet "
                  "(model = echo answers with the player's phrase)",
                  cfg->model[0] ? cfg->model : "(default)");
        return NULL;
    }
    return engine_model;
}
