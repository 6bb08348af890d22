/* fuzz_watch_stub.h: the libFuzzer builds of fuzz_config and fuzz_control compile the settings' own
 * sources, not the whole service: a setting applied tells the watchers (daemon/watch.c) and a model
 * setting starts a switch (daemon/model_switch.c), which are not part of what they fuzz, so watch_set
 * and model_switch_request do nothing there.  The replay builds link the real ones. */
#ifndef CONTINUO_FUZZ_WATCH_STUB_H
#define CONTINUO_FUZZ_WATCH_STUB_H

#ifdef FUZZ_SETTINGS_ONLY
#include "daemon/model_switch.h"
#include "daemon/watch.h"

void watch_set(struct service *sv, const option_def *o)
{
    (void)sv;
    (void)o;
}

int model_switch_request(struct service *sv, char *why, size_t len)
{
    (void)sv;
    (void)why;
    (void)len;
    return 0;
}
#endif

#endif
