/* engine_none.c: stands in for engine_model.c in a build without the model engine. */
#include <stddef.h>

#include "daemon/engine.h"

const engine_ops *const engine_model = NULL;
