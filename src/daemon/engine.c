/* engine.c: picks the engine the config names. */
#include <string.h>

#include "daemon/engine.h"

const engine_ops *engine_for(const config *cfg)
{
    if (strcmp(cfg->model, "echo") == 0)
        return &engine_echo;
    if (strcmp(cfg->model, "stall") == 0)
        return &engine_stall;
    return engine_model;
}
