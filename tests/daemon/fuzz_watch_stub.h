/* fuzz_watch_stub.h: the libFuzzer builds of fuzz_config and fuzz_control compile the settings' own
 * sources, not the whole service: a setting applied tells the watchers (daemon/watch.c), which are not
 * part of what they fuzz, so watch_set does nothing there.  The replay builds link the real one. */
#ifndef CONTINUO_FUZZ_WATCH_STUB_H
#define CONTINUO_FUZZ_WATCH_STUB_H

#ifdef FUZZ_SETTINGS_ONLY
#include "daemon/watch.h"

void watch_set(struct service *sv, const option_def *o)
{
    (void)sv;
    (void)o;
}
#endif

#endif
